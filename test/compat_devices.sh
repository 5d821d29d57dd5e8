#!/bin/sh
# Debian's ibv_devices and ibv_devinfo under iwarp-run see one device,
# iwarp0: an iWARP RNIC whose one port is active on Ethernet, with the
# limits libiwarp enforces and a GID for 127.0.0.1 (IPv4-mapped).
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need ibv_devices ibverbs-utils
need ibv_devinfo ibverbs-utils

timeout -k 5 30 "$run" ibv_devices >"$work/devices" ||
	fail "ibv_devices: exit $?"
grep -Eq '^ +iwarp0[[:space:]]+[0-9a-f]{16}$' "$work/devices" ||
	fail "ibv_devices: $(cat "$work/devices")"
[ "$(grep -c '^ ' "$work/devices")" -eq 3 ] ||
	fail "ibv_devices lists more than iwarp0: $(cat "$work/devices")"

timeout -k 5 30 "$run" ibv_devinfo -v >"$work/info" 2>&1 ||
	fail "ibv_devinfo -v: exit $?: $(cat "$work/info")"
# each line that must be there, as ibv_devinfo prints it
for want in 'hca_id:	iwarp0' 'transport:			iWARP (1)' \
	'board_id:			libiwarp' 'phys_port_cnt:			1' \
	'max_qp_wr:			16384' 'max_sge:			32' \
	'max_sge_rd:			1' 'max_qp_rd_atom:			128' \
	'max_qp_init_rd_atom:		128' 'atomic_cap:			ATOMIC_NONE (0)' \
	'state:			PORT_ACTIVE (4)' 'link_layer:		Ethernet' \
	'pkey_tbl_len:		1' 'MEM_MGT_EXTENSIONS'; do
	grep -qF "$want" "$work/info" || fail "ibv_devinfo -v lacks \"$want\""
done
grep -q 'GID\[ *[0-9]*\]:.*0000:0000:0000:0000:0000:ffff:7f00:0001' "$work/info" ||
	fail "no GID for 127.0.0.1: $(grep GID "$work/info")"
# one GID line for each address, as gid_tbl_len says
n=$(sed -n 's/.*gid_tbl_len:[[:space:]]*//p' "$work/info")
[ "$(grep -c 'GID\[' "$work/info")" -eq "$n" ] ||
	fail "gid_tbl_len $n, GIDs: $(grep -c 'GID\[' "$work/info")"

# without iwarp-run the same binary sees rdma-core's devices, never ours
if ibv_devices 2>/dev/null | grep -q iwarp0; then
	fail "iwarp0 is visible without iwarp-run"
fi
echo "compat_devices: iwarp0 seen by ibv_devices and ibv_devinfo -v ($n GIDs)"
