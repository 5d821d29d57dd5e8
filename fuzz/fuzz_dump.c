// SPDX-License-Identifier: MIT
/*
 * iwarp-dump's reader and decoder: a pcap or pcapng capture (through
 * libpcap, then link layers, IP, TCP reassembly), or one or two raw stream
 * files, decoded with any combination of its options.
 *
 * Input: an octet of options, then the capture file, or the raw streams
 * (the first one's length in two octets, the rest the second).  Whatever
 * the input, the decoder must finish, and its counts must add up: each
 * connection's violations are among the run's, no more FPDUs than octets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "dump.h"
#include "fuzz.h"

#define OPT_RAW 0x01
#define OPT_RAW_TWO 0x02
#define OPT_VERBOSE 0x04
#define OPT_HEX 0x08
#define OPT_QUIET 0x10
#define OPT_STRICT 0x20

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = open("/dev/null", O_WRONLY);

	(void)argc;
	(void)argv;
	/* the decoder prints a line per frame: formatted, then dropped */
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	return 0;
}

static int choice(uint8_t v)
{
	return v % 3 == 0 ? DUMP_UNSET : v % 3 == 1 ? DUMP_OFF : DUMP_ON;
}

static void raw_dir(struct dump_dir *dir, const uint8_t *p, size_t len)
{
	dir->data = malloc(len ? len : 1);
	fz_check(dir->data != NULL, "out of memory");
	memcpy(dir->data, p, len);
	dir->len = len;
}

/* As iwarp-dump --raw A [--raw B] would read them. */
static int read_raw(struct dump *d, struct fz_in *in, bool two)
{
	struct dump_conn *c = dump_conn_new(d);
	const uint8_t *p;
	size_t len;

	fz_check(c != NULL, "out of memory");
	p = fz_bytes(in, two ? fz_u16(in) : fz_left(in), &len);
	raw_dir(&c->dir[0], p, len);
	if (two) {
		p = fz_bytes(in, fz_left(in), &len);
		raw_dir(&c->dir[1], p, len);
	}
	dump_dir_names(c, "a.bin", two ? "b.bin" : NULL);
	return 0;
}

static int read_capture(struct dump *d, struct fz_in *in)
{
	size_t len;
	const uint8_t *p = fz_bytes(in, fz_left(in), &len);
	FILE *f;

	if (!len)
		return -1;
	f = fmemopen((void *)(uintptr_t)p, len, "rb");
	fz_check(f != NULL, "fmemopen");
	return dump_read_pcap_stream(d, f, "capture");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dump d;
	struct fz_in in;
	uint8_t opt, choices;
	uint64_t v = 0, w = 0;
	int rc;

	fz_in_init(&in, data, size);
	opt = fz_u8(&in);
	choices = fz_u8(&in);
	dump_init(&d);
	d.opt.verbose = opt & OPT_VERBOSE;
	d.opt.hex = opt & OPT_HEX;
	d.opt.quiet = opt & OPT_QUIET;
	d.opt.strict = opt & OPT_STRICT;
	d.opt.crc = choice(choices);
	d.opt.markers = choice(choices / 3);
	d.opt.start = (choices / 9) % 3;
	d.raw = opt & OPT_RAW;
	rc = d.raw ? read_raw(&d, &in, opt & OPT_RAW_TWO)
		   : read_capture(&d, &in);
	if (rc == 0) {
		dump_flush(&d);
		fz_check(dump_prepare(&d) == 0, "out of memory");
		dump_flush(&d);
		fz_check(dump_timeline(&d) == 0, "out of memory");
		dump_summary(&d);
		for (struct dump_conn *c = d.conns; c; c = c->next) {
			for (int s = 0; s < 2; s++) {
				const struct dump_dir *dir = &c->dir[s];

				fz_check(dir->st.fpdus * 8 <= dir->len,
					 "%llu FPDUs in %zu octets",
					 (unsigned long long)dir->st.fpdus,
					 dir->len);
				v += dir->st.violations;
				w += dir->st.warnings;
			}
			v += c->violations;
			w += c->warnings;
		}
		fz_check(v <= d.violations && w <= d.warnings,
			 "connections count %llu/%llu, the run %llu/%llu",
			 (unsigned long long)v, (unsigned long long)w,
			 (unsigned long long)d.violations,
			 (unsigned long long)d.warnings);
	}
	dump_fini(&d);
	return 0;
}
