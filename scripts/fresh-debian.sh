#!/usr/bin/env bash
# fresh-debian.sh DIR [TARGET...] - run the README's quick start on a fresh Debian 12: a
# minimal root file system made by debootstrap in DIR, with nothing but make and git added, a
# clean clone of this checkout's HEAD in DIR/root/ferry (under /root, mode 700, as a root login
# would have it), then `make TARGET` for each TARGET (default: demo test) inside a chroot, as
# root, with an empty environment. A release check for maintainers, not part of `make test`
# (it downloads ~600 MB of packages and takes about 20 minutes). Needs root, debootstrap and
# network access to deb.debian.org and the npm registry. Logs: DIR/make-TARGET.log.
# CA certificates added to this host (/usr/local/share/ca-certificates, e.g. a proxy's) are
# copied in, and NODE_EXTRA_CA_CERTS is passed on when set, so npm works behind the same proxy.
# DIR is deleted first when it holds an earlier run of this script.
set -euo pipefail

prog=fresh-debian.sh
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "$prog: $*" >&2; exit 2; }

(($# >= 1)) || die "usage: $prog DIR [TARGET...]"
dir=$1
shift
targets=("$@")
((${#targets[@]})) || targets=(demo test)
((EUID == 0)) || die "must run as root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
[[ $dir == /* ]] || dir=$PWD/$dir
marker=$dir/.ferry-fresh-debian

mounts=(proc sys dev dev/pts dev/shm)
unmount_all() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        if mountpoint -q "$dir/${mounts[i]}" 2>/dev/null; then umount "$dir/${mounts[i]}" || true; fi
    done
}

if [[ -e $dir ]]; then
    [[ -e $marker ]] || die "$dir exists and is not an earlier run of $prog; not touching it"
    unmount_all
    # never delete through a mount that is still there
    if grep -q " $dir/" /proc/mounts; then die "something is still mounted under $dir"; fi
    rm -rf -- "$dir"
fi
mkdir -p -- "$dir"
touch "$marker"
trap unmount_all EXIT

echo "$prog: debootstrap bookworm (minbase) into $dir"
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >"$dir/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $dir/debootstrap.log"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$dir/$m"; done
mount -t tmpfs tmpfs "$dir/dev/shm"

env_in=(HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb)
[[ -n ${NODE_EXTRA_CA_CERTS:-} ]] && env_in+=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
in_chroot() { chroot "$dir" /usr/bin/env -i "${env_in[@]}" bash -c "$1"; }

echo "$prog: adding make, git and ca-certificates"
in_chroot 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make git ca-certificates' \
    >"$dir/apt.log" 2>&1 || die "apt-get failed; see $dir/apt.log"
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$dir/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
    in_chroot 'update-ca-certificates' >>"$dir/apt.log" 2>&1
fi

git clone -q "$root" "$dir/root/ferry"
echo "$prog: clone of $(git -C "$dir/root/ferry" log -1 --format='%h %s' | cut -c1-70)"
rc=0
for t in "${targets[@]}"; do
    start=$(date +%s)
    if in_chroot "cd /root/ferry && make $t" >"$dir/make-$t.log" 2>&1; then
        echo "$prog: make $t: OK in $(($(date +%s) - start)) s"
    else
        echo "$prog: make $t: FAILED after $(($(date +%s) - start)) s; see $dir/make-$t.log" >&2
        tail -n 15 "$dir/make-$t.log" >&2
        rc=1
        break
    fi
done
exit "$rc"
