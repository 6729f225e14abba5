#!/bin/sh
# check_cli_layer.sh - the CLI (cmd/ferry) is a client of the public API: it names no
# internal symbol (ferry__*, FERRY__*) and includes no internal header, except the
# documented shared layer (pure text utilities under src/util, named ferryx_*).
# Usage: check_cli_layer.sh SOURCE_DIR. Exit 0 when clean, 1 listing each offence.
set -u
src=${1:?usage: check_cli_layer.sh SOURCE_DIR}
dir=$src/cmd/ferry
# the shared layer the CLI may borrow (curl's curlx); add a header here only if it is a
# pure text utility named ferryx_*
shared='util/printable.h util/json_text.h util/numtext.h util/utf8.h util/retry_delay.h util/nearest_name.h'
bad=0
# a check that reads nothing passes nothing: SOURCE_DIR must hold the CLI's sources
ls "$dir"/*.c >/dev/null 2>&1 || { echo "check_cli_layer: no C sources in $dir" >&2; exit 1; }
tmp=$(mktemp) || exit 1
inc=$tmp.inc
for f in "$dir"/*.c "$dir"/*.h; do
    name=${f#"$src"/}
    # internal symbols (a mention in a comment counts too: say it with the public name)
    if grep -n 'ferry__\|FERRY__' "$f" >"$tmp" 2>/dev/null; then
        sed "s|^|$name:|; s|\$|  <- internal symbol|" "$tmp"
        bad=1
    fi
    # quoted includes: a header of cmd/ferry itself, a public ferry/*.h, or the shared layer
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
        hdr=$(printf '%s\n' "$line" | sed 's/^[^"]*"\([^"]*\)".*/\1/')
        case $hdr in
        ferry/*.h) continue ;;
        */*) ;;
        *) [ -f "$dir/$hdr" ] && continue ;;
        esac
        ok=0
        for s in $shared; do [ "$hdr" = "$s" ] && ok=1; done
        [ $ok = 1 ] && continue
        echo "$name:${line%%:*}: #include \"$hdr\"  <- internal header (not in the shared layer)"
        echo x >>"$inc"
    done
    [ -f "$inc" ] && bad=1
done
rm -f "$tmp" "$inc"
[ $bad = 0 ] && echo "cmd/ferry uses only the public API and the shared layer"
exit $bad
