#!/bin/sh
# Debian's librdmacm examples under iwarp-run: ucmatose with several
# connections on one event channel (its server sends first, which needs
# the initiator's ready-to-receive message of RFC 6581), the same with
# the identifiers migrated to a new channel (-m), and rdma_server /
# rdma_client, which use synchronous endpoints (rdma_create_ep,
# rdma_get_request) and the rdma_verbs.h helpers.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need ucmatose rdmacm-utils
need rdma_server rdmacm-utils
need rdma_client rdmacm-utils

# $1: server arguments, $2: client arguments, $3: program(s), $4: name
pair() {
	pair_run 60 "$4" "$run ${3% *} $1" "$run ${3#* } $2"
}

for extra in "" "-m"; do
	pair "-b 127.0.0.1 -c 8 -C 50 -S 1000 $extra" \
		"-s 127.0.0.1 -c 8 -C 50 -S 1000" "ucmatose ucmatose" \
		"ucmatose $extra"
	for side in server client; do
		grep -q '^data transfers complete$' "$work/$side" &&
			grep -q '^return status 0$' "$work/$side" ||
			fail "ucmatose $extra $side: $(cat "$work/$side")"
	done
done

pair "-s 127.0.0.1" "-s 127.0.0.1" "rdma_server rdma_client" \
	"rdma_server/rdma_client"
grep -q '^rdma_server: end 0$' "$work/server" ||
	fail "rdma_server: $(cat "$work/server")"
grep -q '^rdma_client: end 0$' "$work/client" ||
	fail "rdma_client: $(cat "$work/client")"
echo "compat_rdmacm: ucmatose (8 connections, with and without -m), rdma_server/rdma_client"
