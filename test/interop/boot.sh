#!/bin/sh
# Boots the siw peer guest, which runs DIR/guest.sh with DIR shared as
# /mnt/share, and exits with that script's status (124: out of time, 125:
# no status).  The console goes to DIR/console.log.
#
#   boot.sh [-f HOSTPORT:GUESTPORT]... [-g GUESTPORT:HOSTPORT]...
#           [-l TAP:ADDRESS/PREFIX] [-t SECS] DIR
#
# -f: 127.0.0.1:HOSTPORT on the host reaches the guest's 10.0.2.15:GUESTPORT.
# -g: the guest's connections to 10.0.2.100:GUESTPORT reach the host's
#     127.0.0.1:HOSTPORT.  Nothing else crosses (slirp, restrict=on).
# -l: a second interface, eth1 with ADDRESS/PREFIX and siw1 on it, joined
#     to the host's tap device TAP (made beforehand, in the network
#     namespace boot.sh runs in): a real link, for peers that need one.
# KVM when the host has kvm_intel or kvm_amd, software emulation otherwise.
set -eu

cache=${IWARP_INTEROP_CACHE:-/var/tmp/libiwarp-interop}
net="user,id=n0,restrict=on,ipv6=off"
secs=300
link=
cmdline="console=ttyS0 panic=-1 quiet loglevel=4"
while getopts f:g:l:t: opt; do
	case $opt in
	f) net="$net,hostfwd=tcp:127.0.0.1:${OPTARG%%:*}-10.0.2.15:${OPTARG##*:}" ;;
	g) net="$net,guestfwd=tcp:10.0.2.100:${OPTARG%%:*}-cmd:socat STDIO TCP4:127.0.0.1:${OPTARG##*:}" ;;
	l)
		link="-netdev tap,id=n1,ifname=${OPTARG%%:*},script=no,downscript=no
			-device virtio-net-pci,netdev=n1"
		cmdline="$cmdline iwarp.link=${OPTARG#*:}"
		;;
	t) secs=$OPTARG ;;
	*) sed -n '2,17p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && [ -f "$1/guest.sh" ] || { sed -n '2,17p' "$0" >&2; exit 2; }
dir=$(cd "$1" && pwd)
[ -f "$cache/vmlinuz" ] && [ -f "$cache/initramfs.cpio.gz" ] ||
	{ echo "boot.sh: no guest in $cache; run build-guest.sh" >&2; exit 2; }

if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
	accel="-accel kvm -cpu host"
else
	accel="-accel tcg,thread=multi -cpu max"
fi
rm -f "$dir/rc"
# shellcheck disable=SC2086 # accel and link are lists of options
timeout "$secs" qemu-system-x86_64 $accel -m 1024 -smp 2 -nographic \
	-no-reboot -kernel "$cache/vmlinuz" -initrd "$cache/initramfs.cpio.gz" \
	-append "$cmdline" \
	-netdev "$net" -device virtio-net-pci,netdev=n0 $link \
	-virtfs "local,path=$dir,mount_tag=share,security_model=none,id=share" \
	-monitor none -serial stdio </dev/null >"$dir/console.log" 2>&1 || {
	rc=$?
	[ "$rc" -eq 124 ] && { echo "boot.sh: the guest ran out of time" >&2; exit 124; }
}
[ -f "$dir/rc" ] || { echo "boot.sh: the guest reported no status" >&2; exit 125; }
exit "$(cat "$dir/rc")"
