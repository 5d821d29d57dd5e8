/* SPDX-License-Identifier: MIT */
/*
 * Every number that shapes who moves the streams on and when (the
 * progress model of ARCHITECTURE.md), in one place, each with why it has
 * its value.  The manual pages quote them: iw_open(3) (PROGRESS),
 * iw_poll_cq(3), iw_progress_cq(3); change both together.
 */
#ifndef IWARP_VERBS_PROGRESS_TUNING_H
#define IWARP_VERBS_PROGRESS_TUNING_H

/* ---- the library's threads (progress.c) --------------------------------- */

/*
 * IW_PROGRESS_THREADS with no count: two loops, the fewest that is more
 * than the default mode's one.  At most PROGRESS_THREADS_MAX, a bound on
 * a wrong count, not a tuned value.  iw_open(3): "0: 2", "at most 1024".
 */
#define PROGRESS_THREADS_DEFAULT 2
#define PROGRESS_THREADS_MAX 1024

/* ---- polls (cq.c) ------------------------------------------------------ */

/*
 * A poll that finds completions makes no system call, but for one in
 * CQ_BUSY_PROGRESS of the CQ's polls (cq->polls): it still reads the
 * sockets, so that what arrives behind a steady stream of send
 * completions (a peer's credits, its Read Requests) does not wait for the
 * CQ to run dry.  iw_poll_cq(3): "every eighth poll".
 */
#define CQ_BUSY_PROGRESS 8

/*
 * Empty polls of a CQ in a row before its polling thread helps other CQs
 * (see progress_help()): 256 are tens of microseconds with nothing for
 * it, far longer than a round trip of a latency test.  iw_open(3).
 */
#define CQ_IDLE_HELP 256

/*
 * From the CQ_YIELD_AFTER-th empty poll in a row on, a poll that finds
 * nothing gives the processor away (sched_yield()) before it returns.
 * The data such a poller waits for is made by the CPU, not a NIC: its
 * peer, in this process or another, must run to send it.  On a busy
 * machine that peer often waits for the very processor the poller spins
 * on, and a poller that kept it would make each round trip cost a time
 * slice of the scheduler (fi_pingpong's 8 octets: hundreds of
 * microseconds instead of ten).  With nobody waiting the yield returns at
 * once.  The first empty poll after completions does not yield: it is the
 * one that finds a queue drained.  Nor does the poll of a CQ that has no
 * queue pair: nothing it could wait for comes from a peer.  Nor that of an
 * armed CQ: its caller checks once more before it sleeps on the event,
 * and sleeping hands the processor over anyway; a yield first would, on
 * a machine with more busy threads than processors, wait out a busy
 * thread's time slice (milliseconds), where a sleeper is woken ahead of
 * them.  iw_poll_cq(3).
 */
#define CQ_YIELD_AFTER 2
/*
 * ...but not when more than this has passed since the thread's last
 * empty poll: a tight loop of polls comes back within microseconds, and
 * a thread that took longer was off its processor already (a program
 * that yields between polls itself, as iwarp-perf and Open MPI's
 * progress loop do when oversubscribed, or one that was preempted).
 * Yielding again would only hand the processor to unrelated work a
 * second time.  iw_poll_cq(3): 50 microseconds.
 */
#define CQ_YIELD_GAP_NS 50000LL

/*
 * The poll right after one that read every socket of the CQ to its end
 * and returned completions skips the read if it finds the CQ empty (a
 * program that polls until a poll comes back empty, as libfabric's verbs
 * provider does, would pay a system call per message for nothing), but
 * only if it comes within this long: a caller that came back later may
 * well find data waiting.  A message's round trip takes longer than this
 * even on loopback.  iw_poll_cq(3): 5 microseconds.
 */
#define CQ_DRAINED_FRESH_NS 5000LL

/*
 * How many helping calls between two looks at who polls which CQ: a CQ
 * whose count of polls has not moved between looks has nobody polling it.
 */
#define HELP_LOOK_EVERY 1024

/* ---- connections the application's polls own (progress.c) -------------- */

/*
 * How often the release timer looks for held connections the
 * application left: one goes back to the loop 10 to 20 ms after its polls
 * stop (iw_open(3)).  A polling
 * thread descheduled on a busy machine misses a look now and then; a
 * connection given back too early only costs the loop a wakeup.
 */
#define RELEASE_LOOK_US 10000

/* ---- manual mode (progress.c) ------------------------------------------ */

/*
 * A CQ's polls run the context's loop once in this many, empty or not,
 * and so do a waiting thread's wakeups (iw_open(3): "one poll of a CQ in
 * 32"): often enough for listeners, handshakes and timers, rarely enough
 * that the poll stays a poll.  A multiple of CQ_BUSY_PROGRESS, so that
 * the turn falls on a poll that reads the sockets even on a busy CQ.
 */
#define MANUAL_LOOP_EVERY 32

/* ---- a thread that waits (progress.c) ----------------------------------- */

/*
 * A waiting thread that finds what it would run taken by another (the
 * manual-mode loop, a QP's lock in iw_progress_cq()) looks again after
 * this long: the holder is at it already, and what it does may be what
 * the waiter waits for.
 */
#define TAKEN_RETRY_MS 1

/*
 * Sockets one wait sleeps on at most (iw_progress_cq(3)); the CQ's other
 * QPs stay the loop's.
 */
#define CQ_WAIT_FDS 256
/*
 * The longest sleep between two looks at the CQ: what another thread
 * completed on it meanwhile, QPs that came or went, a lock that was taken.
 */
#define CQ_WAIT_SLICE_MS 10

/* ---- the spin of a waiting thread (spin.c, spin.h) ---------------------- */

/*
 * A waiter looks again, yielding the processor between looks, until this
 * long has passed since its thread last read data; then it sleeps.  On a
 * 2-core VM, waking a reader that slept between 4 KiB Writes took a fifth
 * of the sending thread's time.  iw_progress_cq(3): 50 microseconds.
 */
#define WAIT_SPIN_NS 50000LL

/*
 * A yield that took this long handed the processor to another thread for
 * a turn of its own: with more busy threads than processors a spinning
 * thread waits out their turns (milliseconds), while one that sleeps is
 * woken ahead of them.  The waiter then sleeps instead of spinning for a
 * while, SPIN_BACKOFF_MIN_NS at first, doubled at each such yield up to
 * SPIN_BACKOFF_MAX_NS, and the shortest again once none came for that
 * long.  iw_progress_cq(3): 200 microseconds, a millisecond, a tenth of a
 * second.
 */
#define SPIN_PREEMPTED_NS 200000LL
#define SPIN_BACKOFF_MIN_NS 1000000LL
#define SPIN_BACKOFF_MAX_NS 100000000LL

#endif
