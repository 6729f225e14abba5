#!/usr/bin/env bash
# check.sh BUILD_DIR - what `make install` gives a C team: `make install PREFIX=<temporary
# prefix>` (quiet: one summary line), then two programs built outside the tree, consumer.c
# (queues, workers) and outbox_consumer.c (the outbox API, so libpq's headers and library),
# each as C99 and C17 with -Wpedantic -Werror, with `pkg-config ferry` and with
# find_package(ferry), and run. The prefix is then moved, and pkg-config must still give the
# right paths. Last, `make uninstall` must remove every installed file (one summary line).
# BUILD_DIR's own install_manifest.txt (a real `make install`'s list) is kept as it was.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "$1" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
manifest=$build/install_manifest.txt
had_manifest=0
if [[ -f $manifest ]]; then
    cp -p "$manifest" "$tmp/manifest.saved"
    had_manifest=1
fi
restore() {
    if ((had_manifest)); then cp -p "$tmp/manifest.saved" "$manifest"; else rm -f "$manifest"; fi
    rm -rf "$tmp"
}
trap restore EXIT

fail() { echo "install check: $*" >&2; exit 1; }

# `make install` as a user runs it (the build it starts with finds nothing to do: quiet too)
mk() { make -C "$root" --no-print-directory BUILD="$build" PREFIX="$tmp/prefix" "$@"; }
out=$(mk install 2>&1) || fail "make install failed: $out"
grep -q -e '-- Installing' -e '-- Up-to-date' <<<"$out" && fail "make install is not quiet: $out"
[[ $out == "ferry install: "*" files under $tmp/prefix "* && $out != *$'\n'* ]] ||
    fail "make install: expected one summary line, got: $out"
for f in bin/ferry include/ferry/ferry.h; do
    [[ -e $tmp/prefix/$f ]] || fail "$f not installed"
done
pc=$(find "$tmp/prefix" -name ferry.pc -print -quit)
[[ -n $pc ]] || fail "ferry.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
grep -qx 'Requires: libpq' "$pc" || fail "ferry.pc does not require libpq (ferry/outbox.h includes <libpq-fe.h>)"

# pkg-config, from the install prefix and again after moving it
pkg_build() { # PREFIX OUTDIR
    local pcdir flags src std bin
    local -a flagv
    pcdir=$(dirname "$(find "$1" -name ferry.pc -print -quit)")
    flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs ferry) || fail "pkg-config ferry failed"
    # pkg-config escapes a space inside a path with a backslash ("-I/tmp/my\ dir/include", e.g.
    # when TMPDIR holds a space): split as the shell would, without eval; `read` without -r
    # keeps an escaped space in its word and drops the backslash.
    # shellcheck disable=SC2162 # backslash processing is the point
    read -a flagv <<<"$flags"
    mkdir -p "$2"
    for src in consumer outbox_consumer; do
        for std in c99 c17; do
            bin=$2/$src-$std
            "$cc" -std=$std -Wall -Wextra -Wpedantic -Werror "$here/$src.c" "${flagv[@]}" -o "$bin" ||
                fail "$src.c does not build as $std with: $flags"
            LD_LIBRARY_PATH=$(dirname "$pcdir") "$bin" >/dev/null || fail "$src ($bin) failed"
        done
    done
}
pkg_build "$tmp/prefix" "$tmp/pc"
mv "$tmp/prefix" "$tmp/moved"
pkg_build "$tmp/moved" "$tmp/pc-moved"
mv "$tmp/moved" "$tmp/prefix"

# find_package(ferry) + ferry::ferry
mkdir -p "$tmp/cm"
cp "$here/consumer.c" "$here/outbox_consumer.c" "$tmp/cm/"
cp "$here/CMakeLists.txt.in" "$tmp/cm/CMakeLists.txt"
CC=$cc cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null ||
    fail "find_package(ferry) failed"
cmake --build "$tmp/cm/build" >/dev/null || fail "the CMake consumers do not build"
for bin in consumer outbox_consumer; do
    LD_LIBRARY_PATH=$libdir "$tmp/cm/build/$bin" >/dev/null || fail "the CMake $bin failed"
done

# make uninstall removes exactly the installed files, saying so in one line
n=$(grep -c "" "$manifest")
out=$(mk uninstall 2>&1) || fail "make uninstall failed: $out"
[[ $out == "ferry uninstall: removed $n files under $tmp/prefix" ]] ||
    fail "make uninstall: expected 'removed $n files under $tmp/prefix', got: $out"
left=$(find "$tmp/prefix" ! -type d -print -quit)
[[ -z $left ]] || fail "make uninstall left $left"
left=$(find "$tmp/prefix" -type d -name ferry -print -quit)
[[ -z $left ]] || fail "make uninstall left the directory $left"
out=$(mk uninstall 2>&1) || fail "a second make uninstall failed: $out"
[[ $out == "ferry uninstall: nothing to remove"* ]] || fail "a second make uninstall said: $out"
echo "install check OK: quiet make install, pkg-config (also after moving the prefix) and" \
    "find_package(ferry), C99 and C17, queue and outbox consumers, make uninstall"
