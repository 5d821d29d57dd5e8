#!/bin/sh
# The manual pages quote the numbers of the progress model as
# verbs/progress_tuning.h sets them, and those of a connection's close as
# lib/transport.h does: each constant's value, in the words a
# page uses for it, is found in that page.  A constant changed without its
# page (or a page reworded without its constant) fails here, naming both.
set -eu

top=${top_srcdir:?run from make check, or set top_srcdir}
tuning="$top/verbs/progress_tuning.h"
man="$top/man/man3"
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -f "$tuning" ] || fail "no $tuning"

# the value a constant is defined to, without a type suffix
value() {
	v=$(sed -n "s/^#define $1 \([0-9][0-9]*\)L*$/\1/p" "$tuning")
	[ -n "$v" ] || fail "$1 is not defined to a number in $tuning"
	echo "$v"
}

# the words the pages use for a small number
ordinal() {
	case $1 in
	2) echo second ;; 4) echo fourth ;; 8) echo eighth ;;
	16) echo sixteenth ;; 32) echo "thirty-second" ;;
	*) fail "no ordinal word for $1: add it here" ;;
	esac
}
spelled() {
	case $1 in
	1) echo one ;; 2) echo two ;; 5) echo five ;; 10) echo ten ;;
	20) echo twenty ;; 100) echo "a hundred" ;;
	*) fail "no word for $1: add it here" ;;
	esac
}
# a duration in nanoseconds as the pages say it
ns_words() {
	case $1 in
	1000000) echo "millisecond" ;;
	100000000) echo "a tenth of a second" ;;
	*)
		if [ $(($1 % 1000)) -ne 0 ] || [ "$1" -ge 1000000 ]; then
			fail "no words for $1 ns: add them here"
		fi
		echo "$(($1 / 1000)) microseconds" ;;
	esac
}

# says PAGE CONSTANT PHRASE: the page (its lines joined, font requests
# and escapes left as they are) holds the phrase
checked=0
says() {
	page="$man/$1"
	[ -f "$page" ] || fail "no page $page"
	tr '\n' ' ' <"$page" | grep -qF -- "$3" ||
		fail "$2 is $(value "$2"), but man3/$1 does not say \"$3\""
	checked=$((checked + 1))
}

v=$(ordinal "$(value CQ_BUSY_PROGRESS)")
says iw_open.3 CQ_BUSY_PROGRESS "every $v poll of a CQ"
says iw_poll_cq.3 CQ_BUSY_PROGRESS "Every $v poll of the CQ"

says iw_poll_cq.3 CQ_DRAINED_FRESH_NS \
	"comes within $(ns_words "$(value CQ_DRAINED_FRESH_NS)")"

says iw_open.3 CQ_IDLE_HELP "empty $(value CQ_IDLE_HELP) polls in a row"

v=$(value MANUAL_LOOP_EVERY)
says iw_open.3 MANUAL_LOOP_EVERY "one poll of a CQ in $v"
says iw_progress_cq.3 MANUAL_LOOP_EVERY "one wakeup in $v"

# the timer looks every RELEASE_LOOK_US; a connection goes at the second
# look after its polls stop
v=$(($(value RELEASE_LOOK_US) / 1000))
says iw_open.3 RELEASE_LOOK_US "$v to $((2 * v)) ms after the polls stop"
says iw_progress_cq.3 RELEASE_LOOK_US "$v to $((2 * v)) milliseconds"

says iw_progress_cq.3 CQ_WAIT_FDS "up to $(value CQ_WAIT_FDS) queue pairs"
says iw_progress_cq.3 CQ_WAIT_SLICE_MS \
	"within about $(spelled "$(value CQ_WAIT_SLICE_MS)") milliseconds"

[ "$(value TAKEN_RETRY_MS)" -eq 1 ] ||
	fail "TAKEN_RETRY_MS changed: iw_progress.3 says \"a millisecond at a time\""
says iw_progress.3 TAKEN_RETRY_MS "waits a millisecond at a time"

says iw_progress_cq.3 WAIT_SPIN_NS \
	"in the last $(ns_words "$(value WAIT_SPIN_NS)") looks again"
says iw_progress_cq.3 SPIN_PREEMPTED_NS \
	"more than $(ns_words "$(value SPIN_PREEMPTED_NS)")"
says iw_progress_cq.3 SPIN_BACKOFF_MIN_NS \
	"the next $(ns_words "$(value SPIN_BACKOFF_MIN_NS)")"
says iw_progress_cq.3 SPIN_BACKOFF_MAX_NS \
	"up to $(ns_words "$(value SPIN_BACKOFF_MAX_NS)")"

says iw_poll_cq.3 CQ_YIELD_AFTER \
	"From the $(ordinal "$(value CQ_YIELD_AFTER)") empty poll in a row on"
says iw_poll_cq.3 CQ_YIELD_GAP_NS \
	"comes back more than $(ns_words "$(value CQ_YIELD_GAP_NS)") after"

says iw_open.3 PROGRESS_THREADS_DEFAULT \
	"IW_PROGRESS_THREADS; 0: $(value PROGRESS_THREADS_DEFAULT) */"
says iw_open.3 PROGRESS_THREADS_MAX "(at most $(value PROGRESS_THREADS_MAX))"

# a connection's FIN, and a destroyed one's socket, wait for the peer's
# acknowledgements
tuning="$top/lib/transport.h"
says iw_create_id.3 TP_LINGER_STALL_MS \
	"acknowledges nothing for $(value TP_LINGER_STALL_MS) ms"
says iw_create_id.3 TP_LINGER_MAX_MS \
	"after $(($(value TP_LINGER_MAX_MS) / 1000)) s in all"
v="$(value TP_LINGER_STALL_MS) ms, or after $(($(value TP_LINGER_MAX_MS) / 1000)) s"
says iw_connect.3 TP_LINGER_STALL_MS "has acknowledged nothing for $v"

echo "progress_numbers: $checked phrases match verbs/progress_tuning.h and lib/transport.h"
