#!/usr/bin/env bash
# fresh-debian.sh DIR [TARGET...] - run the README's quick start on a fresh Debian 12: a
# minimal root file system made by debootstrap in DIR, with nothing but make and git added, a
# clean clone of this checkout's HEAD in DIR/root/ferry (under /root, mode 700, as a root login
# would have it), then `make TARGET` for each TARGET (default: demo test) inside a chroot, as
# root, with an empty environment. A release check for maintainers, not part of `make test`
# (13 minutes on the project's 2-core box, 2026-11-30, most of it `make test`). Needs root, debootstrap and
# network access to deb.debian.org and the npm registry. Logs: DIR/make-TARGET.log.
# CA certificates added to this host (/usr/local/share/ca-certificates, and the file that
# NODE_EXTRA_CA_CERTS names, e.g. a proxy's) are installed in the chroot, and the proxy
# variables (http_proxy, https_proxy, no_proxy, either case) are passed on, so apt and npm work
# behind the same proxy. DIR is deleted first when it holds an earlier run of this script.
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
dir=$(realpath -m -- "$dir") # canonical, as /proc/self/mountinfo shows mount points
[[ $dir != / ]] || die "DIR must not be /"
marker=$dir/.ferry-fresh-debian

# Is anything still mounted at or under DIR? (mountinfo's 5th field, octal-escaped)
mounted_under() {
    awk -v d="$dir" '{ p = $5; gsub(/\\040/, " ", p); if (p == d || index(p, d "/") == 1) f = 1 } END { exit !f }' \
        /proc/self/mountinfo
}

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
    # never delete through a mount that is still there (a server left running in the chroot
    # keeps /dev busy): --one-file-system as a second guard
    if mounted_under; then die "something is still mounted under $dir (a process left in the chroot?)"; fi
    rm -rf --one-file-system -- "$dir"
fi
mkdir -p -- "$dir"
touch "$marker"
trap unmount_all EXIT

echo "$prog: debootstrap bookworm (minbase) into $dir"
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >"$dir/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $dir/debootstrap.log"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
for m in proc sys dev dev/pts; do
    mount --bind "/$m" "$dir/$m"
    mount --make-rslave "$dir/$m" # nothing mounted below it propagates back to the host
done
mount -t tmpfs tmpfs "$dir/dev/shm"

env_in=(HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [[ -n ${!v:-} ]] && env_in+=("$v=${!v}")
done
[[ -n ${NODE_EXTRA_CA_CERTS:-} ]] && env_in+=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
in_chroot() { chroot "$dir" /usr/bin/env -i "${env_in[@]}" bash -c "$1"; }

echo "$prog: adding make, git and ca-certificates"
in_chroot 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make git ca-certificates' \
    >"$dir/apt.log" 2>&1 || die "apt-get failed; see $dir/apt.log"
cadir=$dir/usr/local/share/ca-certificates
mkdir -p "$cadir"
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$cadir/"
fi
if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -r $NODE_EXTRA_CA_CERTS ]]; then
    cp "$NODE_EXTRA_CA_CERTS" "$cadir/host-node-extra-ca.crt"
fi
in_chroot 'update-ca-certificates' >>"$dir/apt.log" 2>&1 ||
    die "update-ca-certificates failed; see $dir/apt.log"

# Git refuses to read a repository owned by another user ("dubious ownership"), and this runs
# as root on a checkout that usually is not root's: trust it for this clone only, through a
# throwaway global config instead of root's ~/.gitconfig.
gitcfg=$(mktemp)
printf '[safe]\n\tdirectory = *\n' >"$gitcfg"
GIT_CONFIG_GLOBAL=$gitcfg git clone -q "$root" "$dir/root/ferry" || { rm -f "$gitcfg"; die "git clone of $root failed"; }
rm -f "$gitcfg"
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
