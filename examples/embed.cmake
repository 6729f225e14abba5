# Embed a text file as a C string: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# The bytes are written as hex escapes, so any character survives.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" esc "${hex}")
string(LENGTH "${esc}" n)
set(body "")
set(i 0)
while(i LESS n)
  string(SUBSTRING "${esc}" ${i} 128 chunk)
  string(APPEND body "    \"${chunk}\"\n")
  math(EXPR i "${i} + 128")
endwhile()
file(WRITE ${OUT} "/* generated from ${IN} */\nconst char ${NAME}[] =\n${body}    \"\";\n")
