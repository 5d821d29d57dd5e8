// SPDX-License-Identifier: MIT
/*
 * iwarp-dump: decodes a capture (pcap or pcapng) or raw stream files into
 * MPA, DDP and RDMAP frames, and names every rule of RFC 5040, 5041, 5044
 * and 6581 the traffic breaks.  Exit status: 0 clean, 1 violations found,
 * 2 bad usage or unreadable input.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

#define PROG "iwarp-dump"
#define EXIT_VIOLATIONS 1
#define EXIT_USAGE 2
#define MAX_RAW 2

static void usage(FILE *to)
{
	fprintf(to,
		"usage: " PROG " [options] CAPTURE\n"
		"       " PROG " [options] --raw FILE [--raw FILE]\n"
		"\n"
		"Decodes iWARP traffic (MPA RFC 5044 and 6581, DDP RFC 5041, RDMAP\n"
		"RFC 5040 and 7306) from a pcap or pcapng capture, or from raw files each\n"
		"holding one direction's TCP octets from the first, and names every\n"
		"rule it breaks.  One line per MPA Request/Reply and per FPDU, at the\n"
		"frame where its last octet arrived; violations, warnings and\n"
		"notices on lines of their own; a summary per connection and\n"
		"direction, whose last line reads \"fpdus N violations M\".\n"
		"\n"
		"  -v, --verbose       every header field of every layer\n"
		"  -x, --hex           a hex dump of each ULPDU\n"
		"  -q, --quiet         only violations, warnings, notices and the summary\n"
		"      --strict        count warnings as violations: reserved bits\n"
		"                      and pad octets that are not zero, which a\n"
		"                      receiver ignores\n"
		"      --raw FILE      a raw stream file instead of a capture; a second\n"
		"                      --raw is the other direction (the first file is\n"
		"                      then the initiator's)\n"
		"      --start WHAT    raw files begin with an MPA frame (frame), with\n"
		"                      FPDUs (fpdu), or either, told by the key (auto,\n"
		"                      the default)\n"
		"      --crc on|off    CRC where no handshake says (a capture without\n"
		"                      one, a raw file with one frame or none)\n"
		"      --markers on|off  markers, likewise\n"
		"  -h, --help          this text\n"
		"\n"
		"Stream offsets in messages count from the first octet of the first\n"
		"FPDU, as MPA markers do; raw file lines start with the file offset.\n"
		"Exit status: 0 clean, 1 violations found, 2 bad usage or input.\n");
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " --help'.\n");
	return EXIT_USAGE;
}

static bool on_off(const char *word, int *out)
{
	if (!strcmp(word, "on"))
		*out = DUMP_ON;
	else if (!strcmp(word, "off"))
		*out = DUMP_OFF;
	else
		return false;
	return true;
}

static bool start_word(const char *word, int *out)
{
	if (!strcmp(word, "auto"))
		*out = DUMP_START_AUTO;
	else if (!strcmp(word, "frame"))
		*out = DUMP_START_FRAME;
	else if (!strcmp(word, "fpdu"))
		*out = DUMP_START_FPDU;
	else
		return false;
	return true;
}

/* Reads a whole raw file into @dir.  0, or -1 after saying why. */
static int load_raw(struct dump_dir *dir, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 65536;

	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	dir->data = malloc(cap);
	while (dir->data) {
		size_t n = fread(dir->data + dir->len, 1, cap - dir->len, f);

		dir->len += n;
		if (dir->len < cap)
			break;
		cap *= 2;
		{
			uint8_t *p = realloc(dir->data, cap);

			if (!p)
				free(dir->data);
			dir->data = p;
		}
	}
	if (!dir->data || ferror(f)) {
		fprintf(stderr, PROG ": %s: %s\n", path,
			dir->data ? "read error" : "out of memory");
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/*
 * The raw files become one connection; the side whose file opens with
 * the Request key opened it, else the first file's.
 */
static int read_raw(struct dump *d, char **files, int n)
{
	struct dump_conn *c = dump_conn_new(d);
	char *names[MAX_RAW] = { NULL, NULL };
	int rc = 0;

	if (!c) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	for (int i = 0; i < n && !rc; i++) {
		names[i] = strdup(files[i]);
		rc = names[i] ? load_raw(&c->dir[i], files[i]) : -1;
	}
	if (!rc)
		dump_dir_names(c, names[0] ? basename(names[0]) : "",
			       names[1] ? basename(names[1]) : NULL);
	free(names[0]);
	free(names[1]);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "hex", no_argument, NULL, 'x' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "raw", required_argument, NULL, 'r' },
		{ "start", required_argument, NULL, 's' },
		{ "crc", required_argument, NULL, 'c' },
		{ "markers", required_argument, NULL, 'm' },
		{ "strict", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct dump d;
	char *raw[MAX_RAW];
	int n_raw = 0, opt, rc;

	dump_init(&d);
	d.opt.crc = d.opt.markers = DUMP_UNSET;
	while ((opt = getopt_long(argc, argv, "vxqh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			d.opt.verbose = true;
			break;
		case 'x':
			d.opt.hex = true;
			break;
		case 'q':
			d.opt.quiet = true;
			break;
		case 'r':
			if (n_raw == MAX_RAW)
				return bad_usage("at most two --raw files (one per direction)");
			raw[n_raw++] = optarg;
			break;
		case 's':
			if (!start_word(optarg, &d.opt.start))
				return bad_usage("--start takes frame, fpdu or auto, not '%s'", optarg);
			break;
		case 'c':
			if (!on_off(optarg, &d.opt.crc))
				return bad_usage("--crc takes on or off, not '%s'", optarg);
			break;
		case 'm':
			if (!on_off(optarg, &d.opt.markers))
				return bad_usage("--markers takes on or off, not '%s'", optarg);
			break;
		case 'S':
			d.opt.strict = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (n_raw && optind < argc)
		return bad_usage("give a capture or --raw files, not both ('%s')", argv[optind]);
	if (!n_raw && optind == argc)
		return bad_usage("no capture given");
	if (!n_raw && optind < argc - 1)
		return bad_usage("one capture at a time ('%s' is extra)",
				 argv[optind + 1]);
	if (!n_raw && d.opt.start != DUMP_START_AUTO)
		return bad_usage("--start applies to --raw files");

	d.raw = n_raw > 0;
	rc = d.raw ? read_raw(&d, raw, n_raw) : dump_read_pcap(&d, argv[optind]);
	if (rc) {
		dump_fini(&d);
		return EXIT_USAGE;
	}
	dump_flush(&d);
	rc = dump_prepare(&d);
	dump_flush(&d);
	if (rc || dump_timeline(&d)) {
		fprintf(stderr, PROG ": out of memory\n");
		dump_fini(&d);
		return EXIT_USAGE;
	}
	dump_summary(&d);
	rc = d.violations ? EXIT_VIOLATIONS : 0;
	dump_fini(&d);
	return rc;
}
