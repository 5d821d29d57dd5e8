// SPDX-License-Identifier: MIT
/*
 * A small MPI program for compat_mpi.sh: every rank of an even count
 * pairs with its neighbour (0 with 1, 2 with 3, ...) and ping-pongs
 * messages of 0 octets to 4 MiB, every octet of each checked, the pairs
 * at the same time; each rank puts 1 MiB into the next rank's window and
 * gets it back (MPI one-sided, fences); then all ranks take part in an
 * MPI_Allreduce of a
 * vector that no rank could compute alone, and in a barrier.  Built
 * against MPI (libopenmpi-dev); what carries the messages is MPI's
 * choice (compat_mpi.sh makes it libfabric's verbs;ofi_rxm under
 * iwarp-run).  Rank 0 prints "mpi_peer: N ranks, ..." at the end; any
 * mismatch aborts the job with a message that names it.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN (4u << 20)
#define ROUNDS 4     /* ping-pongs per size */
#define VEC 100000   /* doubles in the allreduce */

static int rank, nranks;

static void die(const char *what, size_t len, size_t at, int got, int want)
{
	fprintf(stderr,
		"mpi_peer: rank %d: %s: length %zu, octet %zu is %d, not %d\n",
		rank, what, len, at, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The octet at @i of the message of @len that @from sent in @round. */
static uint8_t pattern(size_t len, int round, int from, size_t i)
{
	return (uint8_t)(i * 31 + len * 7 + (size_t)round * 13 +
			 (size_t)from * 101 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, int round, int from)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(len, round, from, i);
}

static void check(const uint8_t *p, size_t len, int round, int from)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(len, round, from, i))
			die("ping-pong data differs", len, i, p[i],
			    pattern(len, round, from, i));
}

/* Ping-pong with the neighbour at every size: 0, 1, 2, 4, ... 4 MiB. */
static size_t ping_pong(uint8_t *tx, uint8_t *rx)
{
	int peer = rank ^ 1, first = !(rank & 1);
	size_t sizes = 0;

	for (size_t len = 0; len <= MAX_LEN; len = len ? len * 2 : 1) {
		for (int r = 0; r < ROUNDS; r++) {
			MPI_Status st;
			int got;

			fill(tx, len, r, rank);
			memset(rx, 0xa5, len + 1);
			if (first) {
				MPI_Send(tx, (int)len, MPI_BYTE, peer, r,
					 MPI_COMM_WORLD);
				MPI_Recv(rx, (int)len + 1, MPI_BYTE, peer, r,
					 MPI_COMM_WORLD, &st);
			} else {
				MPI_Recv(rx, (int)len + 1, MPI_BYTE, peer, r,
					 MPI_COMM_WORLD, &st);
				MPI_Send(tx, (int)len, MPI_BYTE, peer, r,
					 MPI_COMM_WORLD);
			}
			MPI_Get_count(&st, MPI_BYTE, &got);
			if ((size_t)got != len || st.MPI_SOURCE != peer ||
			    st.MPI_TAG != r)
				die("wrong message", len, 0, got, (int)len);
			check(rx, len, r, peer);
			if (rx[len] != 0xa5)
				die("written past the message", len, len,
				    rx[len], 0xa5);
		}
		sizes++;
	}
	return sizes;
}

/*
 * One-sided: each rank puts 1 MiB into the window of the next rank and
 * gets it back from there, between fences, every octet checked.
 */
static void one_sided(uint8_t *win_buf, uint8_t *src, uint8_t *got)
{
	const size_t len = 1u << 20;
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	MPI_Win win;

	memset(win_buf, 0, len);
	fill(src, len, ROUNDS, rank);
	MPI_Win_create(win_buf, (MPI_Aint)len, 1, MPI_INFO_NULL,
		       MPI_COMM_WORLD, &win);
	MPI_Win_fence(0, win);
	MPI_Put(src, (int)len, MPI_BYTE, next, 0, (int)len, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check(win_buf, len, ROUNDS, prev);
	memset(got, 0, len);
	MPI_Get(got, (int)len, MPI_BYTE, next, 0, (int)len, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check(got, len, ROUNDS, rank);
	MPI_Win_free(&win);
}

/* Each rank's vector differs; the sum is known in closed form. */
static void all_reduce(void)
{
	double *in = malloc(VEC * sizeof(*in)), *out = malloc(VEC * sizeof(*out));
	double n = nranks;

	if (!in || !out) {
		fprintf(stderr, "mpi_peer: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int i = 0; i < VEC; i++)
		in[i] = (double)i * (rank + 1) + rank;
	MPI_Allreduce(in, out, VEC, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < VEC; i++) {
		/* sum over r of i * (r + 1) + r */
		double want = (double)i * n * (n + 1) / 2 + n * (n - 1) / 2;

		if (out[i] != want) {
			fprintf(stderr,
				"mpi_peer: rank %d: allreduce element %d is %g, not %g\n",
				rank, i, out[i], want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	uint8_t *tx, *rx, *win;
	size_t sizes;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || nranks % 2) {
		if (!rank)
			fprintf(stderr, "mpi_peer: needs an even number of ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	tx = malloc(MAX_LEN + 1);
	rx = malloc(MAX_LEN + 1);
	win = malloc(1u << 20);
	if (!tx || !rx || !win) {
		fprintf(stderr, "mpi_peer: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	sizes = ping_pong(tx, rx);
	one_sided(win, tx, rx);
	all_reduce();
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_peer: %d ranks, ping-pong of %zu sizes (0 to %u octets) "
		       "checked in %d pairs, put and get of 1 MiB checked, "
		       "allreduce of %d doubles checked\n",
		       nranks, sizes, MAX_LEN, nranks / 2, VEC);
	free(tx);
	free(rx);
	free(win);
	MPI_Finalize();
	return 0;
}
