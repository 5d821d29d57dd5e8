#!/bin/bash
# Builds the siw peer guest once into a cache directory and reuses it:
# Debian's kernel, siw.ko compiled from Debian's linux-source (Debian's
# kernel does not ship it), rdma-core's tools (rsockets' among them),
# perftest, libfabric's, tcpdump and busybox in an initramfs whose /init
# is guest-init.
#
#   build-guest.sh            idempotent; nothing to do takes well under 1 s
#   REBUILD=1 build-guest.sh  start over
#
# Cache: $IWARP_INTEROP_CACHE (default /var/tmp/libiwarp-interop), holding
# vmlinuz and initramfs.cpio.gz.  Needs root for apt-get; everything comes
# from Debian's archive.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${IWARP_INTEROP_CACHE:-/var/tmp/libiwarp-interop}
multiarch=x86_64-linux-gnu
say() { echo "build-guest: $*" >&2; }

mkdir -p "$cache/debs" "$cache/stamps"
[ "${REBUILD:-0}" = 1 ] && rm -f "$cache"/stamps/* "$cache/initramfs.cpio.gz"

# The kernel ABI behind linux-image-amd64 moves with security updates.
kernel_version() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -n 1
}
if [ -f "$cache/stamps/kver" ]; then
	kver=$(cat "$cache/stamps/kver")
else
	kver=$(kernel_version)
	if [ -z "$kver" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		kver=$(kernel_version)
	fi
	[ -n "$kver" ] || { say "no kernel behind linux-image-amd64"; exit 1; }
fi
# the linux-source package of the same upstream series (6.1 for 6.1.0-N)
series=$(echo "$kver" | sed 's/^\([0-9]*\.[0-9]*\).*/\1/')

# ---- host tools ---------------------------------------------------------
host_pkgs="qemu-system-x86 busybox-static cpio kmod gcc make xz-utils
	linux-headers-$kver binutils socat"
missing=
for p in $host_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing$missing"
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	# shellcheck disable=SC2086 # a list
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
		--no-install-recommends $missing >&2
fi

# ---- guest packages -----------------------------------------------------
guest_pkgs="linux-image-$kver linux-source-$series rdma-core ibverbs-providers
	libibverbs1 librdmacm1 ibverbs-utils rdmacm-utils perftest tcpdump
	libnl-3-200 libnl-route-3-200 libpcap0.8 libibumad3 libpci3 iproute2
	libmnl0 libbsd0 libmd0 libcap2 libssl3 libelf1 libbpf1 zlib1g libudev1
	libsystemd0 libc6 libgcc-s1 libfabric1 libfabric-bin libpsm2-2
	libpsm-infinipath1 libatomic1 libuuid1 libnuma1"
# the stamp holds the list it was made for: a longer list fetches the rest
# and unpacks everything again
# shellcheck disable=SC2086 # one line of names
if [ "$(cat "$cache/stamps/debs" 2>/dev/null)" != "$(echo $guest_pkgs)" ]; then
	rm -f "$cache/stamps/debs" "$cache/stamps/sysroot"
fi
if [ ! -f "$cache/stamps/debs" ]; then
	todo=
	for p in $guest_pkgs; do
		ls "$cache/debs/${p}_"*.deb >/dev/null 2>&1 || todo="$todo $p"
	done
	if [ -n "$todo" ]; then
		say "downloading$todo"
		# shellcheck disable=SC2086 # a list
		(cd "$cache/debs" && apt-get download $todo 2>&1 |
			grep -v 'unsandboxed' >&2 || true)
		for p in $todo; do
			ls "$cache/debs/${p}_"*.deb >/dev/null 2>&1 ||
				{ say "could not download $p"; exit 1; }
		done
	fi
	echo "$kver" >"$cache/stamps/kver"
	# shellcheck disable=SC2086 # one line of names
	echo $guest_pkgs >"$cache/stamps/debs"
fi

# ---- the guest's files ---------------------------------------------------
sysroot=$cache/sysroot
if [ ! -f "$cache/stamps/sysroot" ]; then
	say "unpacking the guest packages"
	rm -rf "$sysroot"
	mkdir -p "$sysroot"
	for d in "$cache"/debs/*.deb; do
		case $d in */linux-source-*) continue ;; esac
		dpkg -x "$d" "$sysroot"
	done
	touch "$cache/stamps/sysroot"
fi
cp -u "$sysroot/boot/vmlinuz-$kver" "$cache/vmlinuz"

# ---- siw.ko, out of tree against the image's headers ---------------------
siw=$cache/siw
if [ ! -f "$cache/stamps/siw" ]; then
	say "compiling siw.ko"
	rm -rf "$siw"
	mkdir -p "$siw.src"
	dpkg-deb --fsys-tarfile "$cache"/debs/linux-source-"$series"_*.deb |
		tar -xO "./usr/src/linux-source-$series.tar.xz" |
		tar -xJ -C "$siw.src" --wildcards \
			"linux-source-$series/drivers/infiniband/sw/siw/*"
	mv "$siw.src/linux-source-$series/drivers/infiniband/sw/siw" "$siw"
	rm -rf "$siw.src"
	make -s -C "/usr/src/linux-headers-$kver" M="$siw" CONFIG_RDMA_SIW=m \
		modules >&2
	strip --strip-debug "$siw/siw.ko"
	touch "$cache/stamps/siw"
fi
# (again after the guest packages were unpacked anew)
if ! cmp -s "$siw/siw.ko" "$sysroot/lib/modules/$kver/extra/siw.ko"; then
	mkdir -p "$sysroot/lib/modules/$kver/extra"
	cp "$siw/siw.ko" "$sysroot/lib/modules/$kver/extra/"
	depmod -b "$sysroot" "$kver"
fi

# ---- the initramfs ---------------------------------------------------------
out=$cache/initramfs.cpio.gz
if [ -f "$out" ] && [ ! "$here/guest-init" -nt "$out" ] &&
	[ ! "$0" -nt "$out" ] && [ ! "$cache/stamps/siw" -nt "$out" ] &&
	[ ! "$cache/stamps/sysroot" -nt "$out" ]; then
	exit 0
fi
say "packing the initramfs"
root=$cache/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt/share,root,lib64} \
	"$root"/{usr/bin,usr/sbin,lib/$multiarch,usr/lib/$multiarch/libibverbs} \
	"$root/etc/libibverbs.d"

cp /bin/busybox "$root/bin/"
for applet in $(/bin/busybox --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done

# (libpsm1: libpsm-infinipath1's library, which only dpkg's alternatives
# would link, under its soname, into the multiarch directory)
libdirs="$sysroot/lib/$multiarch $sysroot/usr/lib/$multiarch
	$sysroot/usr/lib/$multiarch/libibverbs $sysroot/usr/lib/libpsm1
	/lib/$multiarch /usr/lib/$multiarch"
declare -A have=()
# Copies the shared libraries @1 needs, recursively, guest's first.
add_libs() {
	local lib dir found f
	for lib in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -n "${have[$lib]:-}" ] && continue
		found=
		for dir in $libdirs; do
			[ -e "$dir/$lib" ] && { found=$dir/$lib; break; }
			for f in "$dir/$lib".[0-9]*; do
				[ -e "$f" ] && { found=$f; break 2; }
			done
		done
		[ -n "$found" ] || { say "$lib (for $1) not found"; exit 1; }
		have[$lib]=1
		cp -L "$found" "$root/lib/$multiarch/$lib"
		add_libs "$found"
	done
}
add_prog() {
	[ -e "$1" ] || { say "missing $1"; exit 1; }
	cp -L "$1" "$root/$2/"
	add_libs "$1"
}

cp -L "$sysroot/lib/$multiarch/ld-linux-x86-64.so.2" "$root/lib/$multiarch/"
ln -s "../lib/$multiarch/ld-linux-x86-64.so.2" "$root/lib64/"
have[ld-linux-x86-64.so.2]=1
# glibc loads it at run time for thread cancellation; rping needs it
cp -L "$sysroot/lib/$multiarch/libgcc_s.so.1" "$root/lib/$multiarch/"
have[libgcc_s.so.1]=1

for p in rping ucmatose rdma_server rdma_client ibv_devices ibv_devinfo \
	ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat \
	rstream riostream fi_info fi_pingpong tcpdump; do
	add_prog "$sysroot/usr/bin/$p" usr/bin
done
add_prog "$sysroot/usr/bin/rdma" usr/sbin
add_prog "$sysroot/bin/ip" usr/sbin
# the siw provider, found by libibverbs through siw.driver
add_prog "$sysroot/usr/lib/$multiarch/libibverbs/libsiw-rdmav34.so" \
	"usr/lib/$multiarch/libibverbs"
cp "$sysroot/etc/libibverbs.d/siw.driver" "$root/etc/libibverbs.d/"
for l in "$root/lib/$multiarch"/*; do
	ln -sf "../../../lib/$multiarch/${l##*/}" "$root/usr/lib/$multiarch/"
done

# kernel modules in dependency order, as modprobe would load them
: >"$root/etc/modules.order"
declare -A loaded=()
for m in crc32c_generic libcrc32c virtio_pci virtio_net 9pnet_virtio 9p \
	ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm siw; do
	while read -r verb path _; do
		[ "$verb" = insmod ] || continue
		rel=${path#"$sysroot"}
		[ -n "${loaded[$rel]:-}" ] && continue
		loaded[$rel]=1
		mkdir -p "$root/${rel%/*}"
		cp "$path" "$root/$rel"
		echo "$rel" >>"$root/etc/modules.order"
	done < <(modprobe -d "$sysroot" -S "$kver" --show-depends "$m")
done
grep -q '/siw.ko$' "$root/etc/modules.order" || { say "siw.ko not staged"; exit 1; }

printf 'root:x:0:0:root:/root:/bin/sh\ntcpdump:x:104:108::/:/bin/false\n' \
	>"$root/etc/passwd"
printf 'root:x:0:\ntcpdump:x:108:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n10.0.2.15 guest\n' >"$root/etc/hosts"
cp /etc/services /etc/protocols "$root/etc/" 2>/dev/null || true
install -m 0755 "$here/guest-init" "$root/init"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) |
	gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
say "ready: $cache/vmlinuz, $out ($(du -h "$out" | cut -f1))"
