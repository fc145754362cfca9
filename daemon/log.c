/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "viad.h"

static enum via_log_level log_level = VIA_LOG_INFO;

static const char *const level_names[] = {
	[VIA_LOG_ERR] = "error",
	[VIA_LOG_WARNING] = "warning",
	[VIA_LOG_INFO] = "info",
	[VIA_LOG_DEBUG] = "debug",
};

int
via_log_set_level(const char *name)
{
	unsigned i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			log_level = (enum via_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* syslog priorities of the levels (sd-daemon(3)'s "<N>" prefixes) */
static const int level_priorities[] = {
	[VIA_LOG_ERR] = 3, [VIA_LOG_WARNING] = 4, [VIA_LOG_INFO] = 6, [VIA_LOG_DEBUG] = 7,
};

/*
 * Whether stderr goes to the journal: systemd says so in JOURNAL_STREAM
 * ("DEVICE:INODE" of the stream it gave), which a child that redirected
 * stderr elsewhere inherits too, hence the comparison (systemd.exec(5)).
 */
static bool
to_journal(void)
{
	static int known = -1;
	const char *js;
	struct stat st;
	unsigned long dev, ino;

	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (k >= 0)
		return k;
	/* threads that race here find the same answer */
	js = getenv("JOURNAL_STREAM");
	k = js != NULL && sscanf(js, "%lu:%lu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
	    st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
	__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	return k;
}

void
via_log(enum via_log_level level, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level > log_level)
		return;
	if (to_journal()) {
		/* the journal stamps the time; the priority lets journalctl -p filter */
		n = snprintf(line, sizeof(line), "<%d>%s: ", level_priorities[level],
			     level_names[level]);
	} else {
		/* ISO 8601, UTC */
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ viad %s: ",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
	}
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one write per line so lines of concurrent threads never interleave */
	fprintf(stderr, "%s\n", line);
}

uint64_t
via_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
