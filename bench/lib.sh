# shellcheck shell=bash
# lib.sh - shared by bench/run.sh and bench/relay/run.sh. Sourced, never executed.

# bench_check_build BIN: refuse (exit 1) a ferry CLI that names a debug or sanitizer build on
# the "build:" line of `ferry --version`, unless BENCH_ANY_BUILD=1; a CLI without that line
# predates it and is only warned about. Sets bench_ferry_version (the first line) and
# bench_ferry_build (the build, "" when not named).
bench_check_build() {
    local out
    out=$("$1" --version 2>/dev/null) || true
    bench_ferry_version=$(head -n 1 <<<"$out")
    bench_ferry_build=$(sed -n 's/^build: //p' <<<"$out")
    if [[ -z $bench_ferry_build ]]; then
        printf 'bench: warning: %s does not name its build; make sure it is optimised\n' "$1" >&2
    elif [[ ! $bench_ferry_build =~ ^(Release|RelWithDebInfo|MinSizeRel)$ && ${BENCH_ANY_BUILD:-0} != 1 ]]; then
        printf 'bench: error: %s is a "%s" build: benchmark an optimised one without sanitizers (make bench builds build/), or set BENCH_ANY_BUILD=1\n' \
            "$1" "$bench_ferry_build" >&2
        exit 1
    fi
}
