# uninstall.cmake - remove what `cmake --install` put in place, as listed in its
# install_manifest.txt (`make uninstall`, or the `uninstall` target). Run with
#   cmake -DMANIFEST=BUILD/install_manifest.txt -P uninstall.cmake
# DESTDIR in the environment is honoured as at install time. Only the files in the manifest are removed, then the directories ferry alone owns
# (include/ferry, lib/cmake/ferry) when they are left empty; nothing else is touched. One line
# says what was removed. The manifest goes too, so a second run says there is nothing to do.
cmake_minimum_required(VERSION 3.20) # script mode: the policies of that version
if(NOT DEFINED MANIFEST)
  message(FATAL_ERROR "uninstall: MANIFEST not set (cmake -DMANIFEST=BUILD/install_manifest.txt -P uninstall.cmake)")
endif()
if(NOT EXISTS "${MANIFEST}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo
                  "ferry uninstall: nothing to remove (no ${MANIFEST}: not installed from this build directory, or already removed)")
  return()
endif()

file(STRINGS "${MANIFEST}" files)
set(removed 0)
set(absent 0)
set(common "")
set(dirs "")
foreach(f IN LISTS files)
  set(f "$ENV{DESTDIR}${f}") # the manifest lists paths without DESTDIR
  if(IS_SYMLINK "${f}" OR EXISTS "${f}")
    if(IS_DIRECTORY "${f}" AND NOT IS_SYMLINK "${f}")
      message(FATAL_ERROR "uninstall: ${f} is a directory now, not the file that was installed; left in place")
    endif()
    file(REMOVE "${f}")
    if(IS_SYMLINK "${f}" OR EXISTS "${f}")
      message(FATAL_ERROR "uninstall: could not remove ${f} (permissions?); ${MANIFEST} kept")
    endif()
    math(EXPR removed "${removed} + 1")
  else()
    math(EXPR absent "${absent} + 1")
  endif()
  get_filename_component(d "${f}" DIRECTORY)
  get_filename_component(base "${d}" NAME)
  if(base STREQUAL "ferry")
    list(APPEND dirs "${d}")
  endif()
  # the longest directory every listed file is under, to name it in the summary
  if(common STREQUAL "")
    set(common "${d}")
  else()
    while(TRUE)
      string(LENGTH "${common}/" n)
      string(SUBSTRING "${d}/" 0 ${n} head)
      if(head STREQUAL "${common}/" OR common STREQUAL "/" OR common STREQUAL "")
        break()
      endif()
      get_filename_component(common "${common}" DIRECTORY)
    endwhile()
  endif()
endforeach()

list(REMOVE_DUPLICATES dirs)
foreach(d IN LISTS dirs)
  file(GLOB left "${d}/*")
  if(IS_DIRECTORY "${d}" AND NOT IS_SYMLINK "${d}" AND NOT left)
    file(REMOVE_RECURSE "${d}") # empty: removes the directory alone
  endif()
endforeach()
file(REMOVE "${MANIFEST}")

set(note "")
if(absent GREATER 0)
  set(note " (${absent} listed files were already gone)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E echo "ferry uninstall: removed ${removed} files under ${common}${note}")
