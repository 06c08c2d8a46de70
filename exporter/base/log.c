// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

enum log_level log_threshold = LOG_INFO; /* __atomic_*: a reload sets it */

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int log_level_parse(const char *s, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void log_line(enum log_level level, const char *fmt, va_list ap, const char *suffix)
{
	char ts[32], msg[1024];
	struct timespec now;
	struct tm tm;
	int n;

	if (level > __atomic_load_n(&log_threshold, __ATOMIC_RELAXED)) /* a reload sets it */
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (suffix && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", suffix);
	/* Quotes in messages would break logfmt parsers; they are rare enough to swap. */
	for (char *p = msg; *p; p++)
		if (*p == '"' || *p == '\n')
			*p = '\'';
	fprintf(stderr, "ts=%s.%03ldZ level=%s msg=\"%s\"\n", ts, now.tv_nsec / 1000000,
		level_names[level], msg);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(level, fmt, ap, NULL);
	va_end(ap);
}

int log_errno(const char *fmt, ...)
{
	int err = errno ? errno : EIO;
	va_list ap;

	va_start(ap, fmt);
	log_line(LOG_ERROR, fmt, ap, strerror(err));
	va_end(ap);
	return -err;
}
