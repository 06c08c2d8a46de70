/* SPDX-License-Identifier: GPL-2.0-only */
/* One line per event on stderr, logfmt style, filtered by level. */
#ifndef NETSTACK_LOG_H
#define NETSTACK_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Set by main (start, reload), read by every thread. */
extern enum log_level log_threshold; /* read and written with __atomic_* */

/* 0, or -EINVAL for a name that is not a level. */
int log_level_parse(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The error of the failed call that set errno, as "<fmt>: <strerror(errno)>" at error level;
 * returns -errno (-EIO if errno was 0) for the caller to return: the failure logged once.
 */
int log_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Log only the first time *flag is seen false: for conditions that repeat every scrape. */
#define log_once(flag, level, ...)                                                                 \
	do {                                                                                       \
		if (!(flag)) {                                                                     \
			(flag) = true;                                                             \
			log_msg(level, __VA_ARGS__);                                               \
		}                                                                                  \
	} while (0)

#endif
