#!/bin/sh
# Every way a connection ends, under valgrind: no invalid access, no leak.
set -eu
command -v valgrind >/dev/null 2>&1 ||
	{ echo "valgrind not found: install the Debian package valgrind" >&2; exit 99; }
exec timeout 600 valgrind -q --leak-check=full \
	--errors-for-leak-kinds=definite,indirect --error-exitcode=9 ./lifecycle
