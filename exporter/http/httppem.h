/* SPDX-License-Identifier: GPL-2.0-only */
/* The TLS settings of a daemon, checked before it starts (httppem.c). */
#ifndef NETSTACK_HTTPPEM_H
#define NETSTACK_HTTPPEM_H

#include <stddef.h>

struct web;

/*
 * No I/O: the GnuTLS priorities for min_version ("TLS10".."TLS13", checked by the
 * configuration) into buf; then whether w's certificate, key, client CA and priorities load as
 * libmicrohttpd will load them: 0, or -EINVAL (-ENOMEM) with the reason in err.
 */
void tls_priorities(char *buf, size_t len, const char *min_version);
int tls_check(const struct web *w, char *err, size_t errlen);

#endif
