#!/usr/bin/env bash
# check_layers.sh - the module map of docs/architecture.md, enforced: a module under src/ includes
# only its own headers, the public ferry/ headers and those of the modules below it; a
# *_internal.h header is included only inside its own module; examples/ and bench/ use the public
# API only. Prints every violation (file:line: what) and exits 1 when there is one, else 0.
#
#   tests/layout/check_layers.sh SOURCE_DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: check_layers.sh SOURCE_DIR" >&2; exit 2; }
cd -- "$1"

# module -> the modules it may use (docs/architecture.md, "Module map"). Keep the two in step.
declare -A USES=(
    [util]=""
    [lua]=""
    [redis]="util"
    [pg]="util"
    [envelope]="util"
    [metrics]="util"
    [contract]="util envelope"
    [queue]="util redis"
    [sched]="util redis queue"
    [worker]="util redis queue sched envelope metrics contract"
    [outbox]="util redis pg envelope queue metrics"
    [inbox]="util pg envelope metrics"
    [deadletter]="util redis pg envelope queue metrics"
    [admin]="util redis pg envelope metrics contract queue sched worker outbox inbox deadletter"
)

bad=0
report() { printf '%s\n' "$*"; bad=1; }
# a check that reads nothing passes nothing: SOURCE_DIR must hold the tree
nsrc=$( (find src -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null || true) | wc -l)
((nsrc > 0)) || { echo "check_layers: no C sources under $PWD/src" >&2; exit 1; }

while IFS= read -r f; do
    mod=${f#src/}; mod=${mod%%/*}
    if [[ -z ${USES[$mod]+set} ]]; then
        report "$f: module src/$mod is not in the module map (tests/layout/check_layers.sh, docs/architecture.md)"
        continue
    fi
    # the directory of f inside src/, e.g. outbox/relay
    dir=${f#src/}; dir=${dir%/*}
    while IFS=: read -r line inc; do
        inc=${inc#*\"}; inc=${inc%%\"*}
        [[ $inc == */* ]] || continue   # generated or same-directory includes
        im=${inc%%/*}
        [[ $im == ferry ]] && continue
        if [[ $inc == *_internal.h && ${inc%/*} != "$dir" && $im != "$mod" ]]; then
            report "$f:$line: includes $inc, another module's internal header"
            continue
        fi
        if [[ $inc == *_internal.h && ${inc%/*} != "$dir" && $dir != "${inc%/*}"/* ]]; then
            report "$f:$line: includes $inc, the internal header of ${inc%/*}/, from $dir/"
            continue
        fi
        [[ $im == "$mod" ]] && continue
        case " ${USES[$mod]} " in
            *" $im "*) ;;
            *) report "$f:$line: src/$mod includes $inc, but $mod may use only: ${USES[$mod]:-(nothing)}" ;;
        esac
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(find src -type f \( -name '*.c' -o -name '*.h' \) | sort)

# Examples and benchmarks are clients of the public API: no internal header, no internal symbol.
while IFS= read -r f; do
    while IFS=: read -r line inc; do
        inc=${inc#*\"}; inc=${inc%%\"*}
        [[ $inc == ferry/* || $inc != */* ]] || report "$f:$line: includes $inc (examples and bench use the public API only)"
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
    if grep -nE '\bferry(__|x_)[A-Za-z0-9_]+' "$f" >/dev/null; then
        while IFS= read -r hit; do
            report "$f:${hit%%:*}: uses an internal symbol ($(grep -oE '\bferry(__|x_)[A-Za-z0-9_]+' <<<"$hit" | head -1))"
        done < <(grep -nE '\bferry(__|x_)[A-Za-z0-9_]+' "$f")
    fi
done < <(find examples bench -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)

if ((bad)); then
    echo "check_layers: the layout rules above are broken (see docs/architecture.md)" >&2
    exit 1
fi
echo "check_layers: every include of $nsrc files under src/ follows the module map"
