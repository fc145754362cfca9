/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld viad %s: ", tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
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
