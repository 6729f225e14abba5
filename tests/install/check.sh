#!/usr/bin/env bash
# check.sh BUILD_DIR - what `make install` gives a C team: install BUILD_DIR into a temporary
# prefix (as `cmake --install --prefix`, which `make install PREFIX=...` runs), then build
# consumer.c outside the tree twice, with `pkg-config ferry` and with find_package(ferry), and
# run both. The prefix is then moved, and pkg-config must still give the right paths.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
build=$(cd -- "$1" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "install check: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/ferry include/ferry/ferry.h; do
    [[ -e $tmp/prefix/$f ]] || fail "$f not installed"
done
pc=$(find "$tmp/prefix" -name ferry.pc -print -quit)
[[ -n $pc ]] || fail "ferry.pc not installed"
libdir=$(dirname "$(dirname "$pc")")

# pkg-config, from the install prefix and again after moving it
pkg_build() { # PREFIX OUT
    local pcdir flags
    local -a flagv
    pcdir=$(dirname "$(find "$1" -name ferry.pc -print -quit)")
    flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs ferry) || fail "pkg-config ferry failed"
    # pkg-config escapes a space inside a path with a backslash ("-I/tmp/my\ dir/include", e.g.
    # when TMPDIR holds a space): split as the shell would, without eval; `read` without -r
    # keeps an escaped space in its word and drops the backslash.
    # shellcheck disable=SC2162 # backslash processing is the point
    read -a flagv <<<"$flags"
    "$cc" -std=c17 -Wall -Wextra -Werror "$here/consumer.c" "${flagv[@]}" -o "$2" ||
        fail "consumer does not build with: $flags"
    LD_LIBRARY_PATH=$(dirname "$pcdir") "$2" >/dev/null || fail "consumer ($2) failed"
}
pkg_build "$tmp/prefix" "$tmp/consumer-pc"
mv "$tmp/prefix" "$tmp/moved"
pkg_build "$tmp/moved" "$tmp/consumer-moved"
mv "$tmp/moved" "$tmp/prefix"

# find_package(ferry) + ferry::ferry
mkdir -p "$tmp/cm"
cp "$here/consumer.c" "$tmp/cm/"
cp "$here/CMakeLists.txt.in" "$tmp/cm/CMakeLists.txt"
CC=$cc cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null ||
    fail "find_package(ferry) failed"
cmake --build "$tmp/cm/build" >/dev/null || fail "the CMake consumer does not build"
LD_LIBRARY_PATH=$libdir "$tmp/cm/build/consumer" >/dev/null || fail "the CMake consumer failed"
echo "install check OK: pkg-config (also after moving the prefix) and find_package(ferry)"
