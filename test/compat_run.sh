#!/bin/sh
# iwarp-run: the environment it sets (-e, -d, -t, -x), that the programs a
# script starts inherit it (ibv_devices behind sh -c sees iwarp0), and
# its usage errors.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need ibv_devices ibverbs-utils

# -e: shell assignments that put the build tree's libraries first
eval "$("$run" -e)"
case $LD_LIBRARY_PATH in
"$abs_top_builddir/compat/ibverbs/.libs:$abs_top_builddir/compat/rdmacm/.libs:$abs_top_builddir/.libs"*) ;;
*) fail "-e: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" ;;
esac
unset LD_LIBRARY_PATH
"$run" -e -d -t "$work/t.pcap" >"$work/env"
grep -qx 'IWARP_DEBUG=1; export IWARP_DEBUG' "$work/env" ||
	fail "-d: $(cat "$work/env")"
grep -qx "IWARP_TRACE='$work/t.pcap'; export IWARP_TRACE" "$work/env" ||
	fail "-t: $(cat "$work/env")"
"$run" -e --rfc7306 >"$work/env"
grep -qx 'IWARP_RFC7306=1; export IWARP_RFC7306' "$work/env" ||
	fail "--rfc7306: $(cat "$work/env")"
out=$(timeout -k 5 30 "$run" -x -- sh -c 'echo "$IWARP_RFC7306"')
[ "$out" = 1 ] || fail "-x did not reach the program: $out"

# a program started by a script started by iwarp-run
out=$(timeout -k 5 30 "$run" sh -c 'sh -c ibv_devices') || fail "sh -c: exit $?"
echo "$out" | grep -q iwarp0 || fail "a script's child does not see iwarp0: $out"
out=$(timeout -k 5 30 "$run" -d -- sh -c 'echo "$IWARP_DEBUG"')
[ "$out" = 1 ] || fail "-d did not reach the program: $out"

# usage errors: status 2 and a reason
status=0
"$run" >/dev/null 2>"$work/err" || status=$?
[ "$status" -eq 2 ] && grep -q 'no program to run' "$work/err" ||
	fail "no program: exit $status: $(cat "$work/err")"
status=0
"$run" --no-such-option true >/dev/null 2>"$work/err" || status=$?
[ "$status" -eq 2 ] && grep -q 'unknown option --no-such-option' "$work/err" ||
	fail "unknown option: exit $status: $(cat "$work/err")"
# the program's own status comes back
status=0
"$run" sh -c 'exit 7' || status=$?
[ "$status" -eq 7 ] || fail "exit status $status, not the program's 7"
"$run" -V | grep -q '^iwarp-run (libiwarp) ' || fail "-V: $("$run" -V)"
echo "compat_run: environment, inheritance and usage of iwarp-run"
