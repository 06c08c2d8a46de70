// SPDX-License-Identifier: GPL-2.0-only
/*
 * One daemon: what it serves with (its configuration, the TLS files read and checked) and its
 * start and stop.
 */
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/parse.h"
#include "http/httpguard.h"
#include "http/httppem.h"
#include "http/httproute.h"
#include "http/httpweb.h"

/* A whole PEM file (at most 1 MiB), NUL-terminated; NULL with the reason in err, errno set. */
static char *read_pem(const char *key, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0;
	int e = errno;

	if (f) {
		buf = malloc(1 << 20);
		n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
		if (!buf || ferror(f) || !feof(f) || !n) {
			e = !buf ? ENOMEM : ferror(f) ? EIO : EINVAL;
			free(buf);
			buf = NULL;
		}
		fclose(f);
	}
	if (!buf) {
		snprintf(err, errlen, "[web] %s: cannot read %s%s%s", key, path, f ? "" : ": ",
			 f ? " (empty, unreadable or over 1 MiB)" : strerror(e));
		errno = e;
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

void web_free(struct web *w)
{
	if (!w)
		return;
	free(w->cert);
	free(w->key);
	free(w->ca);
	free(w);
}

struct web *web_new(const struct web_config *cfg, char *err, size_t errlen)
{
	struct web *w = calloc(1, sizeof(*w));
	int ret = -EINVAL;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->cfg = *cfg;
	w->listen_fd = -1;
	if (!cfg->tls_cert_file[0])
		return w;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "[web] tls_cert_file: this libmicrohttpd has no TLS support");
		goto fail;
	}
	w->cert = read_pem("tls_cert_file", cfg->tls_cert_file, err, errlen);
	w->key = w->cert ? read_pem("tls_key_file", cfg->tls_key_file, err, errlen) : NULL;
	if (!w->key ||
	    (cfg->tls_client_ca_file[0] &&
	     !(w->ca = read_pem("tls_client_ca_file", cfg->tls_client_ca_file, err, errlen)))) {
		ret = -errno;
		goto fail;
	}
	tls_priorities(w->priorities, sizeof(w->priorities), cfg->tls_min_version);
	ret = tls_check(w, err, errlen);
	if (ret)
		goto fail;
	return w;
fail:
	web_free(w);
	errno = -ret;
	return NULL;
}

/* File descriptors open now. */
static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 256;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * max_connections within RLIMIT_NOFILE, whose soft limit is raised (up to the hard one) when
 * it is too low, as Go programs do at start: past it accept() fails and the daemon stops
 * accepting for a while, the scraper included. What still does not fit is served less.
 */
static unsigned fit_nofile(unsigned want)
{
	/* TLS files, pods' API connections, a reload's new maps, the new daemon's epoll. */
	rlim_t base = open_fds() + 64, headroom = guard_mhd_limit(0);
	rlim_t need = base + guard_mhd_limit(want), fit = 1;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return want;
	if (rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
		if (!setrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur >= need)
			return want;
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur > base + headroom + 1)
		fit = rl.rlim_cur - base - headroom;
	log_warn("[web] max_connections: %u do not fit in the open file limit (%llu); serving %u",
		 want, (unsigned long long)rl.rlim_cur, (unsigned)fit);
	return (unsigned)fit;
}

void web_stop(struct web *w)
{
	guard_quiesce(w->guard);
	MHD_stop_daemon(w->daemon);
	guard_free(w->guard);
	w->daemon = NULL;
	w->guard = NULL;
}

/* On cfg.listen_address, or on listen_fd when >= 0 (libmicrohttpd's from then on). */
int web_start(struct web *w, int listen_fd, char *err, size_t errlen)
{
	/*
	 * One epoll thread: scrapes are serialised (collectors need no locks), idle or slow
	 * clients cost a file descriptor and a small pool each, never a thread. ITC lets a reload
	 * take the listening socket over (MHD_quiesce_daemon); suspending lets a connection wait
	 * for its password check while the thread serves others.
	 */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
			 MHD_ALLOW_SUSPEND_RESUME;
	unsigned max_conns = fit_nofile(w->cfg.max_connections);
	struct MHD_OptionItem opts[8];
	struct sockaddr_storage ss;
	int n = 0;
	bool any;

	if (parse_listen_address(w->cfg.listen_address, &ss, &any)) {
		snprintf(err, errlen, "bad listen address '%s': " LISTEN_ADDRESS_FORM,
			 w->cfg.listen_address);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6 | (any ? MHD_USE_DUAL_STACK : 0);
	if (listen_fd >= 0)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL };
	else
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &ss };
	if (w->cert) {
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, w->key };
		opts[n++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, w->priorities };
	}
	if (w->ca)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, w->ca };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	w->guard = guard_new(w->h->guards, max_conns);
	if (!w->guard) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, web_handle, w, MHD_OPTION_EXTERNAL_LOGGER, web_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, web_unescape, NULL, MHD_OPTION_NOTIFY_CONNECTION,
		web_connection, w, MHD_OPTION_NOTIFY_COMPLETED, web_completed, NULL,
		MHD_OPTION_CONNECTION_LIMIT, guard_mhd_limit(max_conns),
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, w->cfg.max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, w->cfg.timeout_seconds,
		/* The per-connection pool holds the request line and headers. */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)w->cfg.max_request, MHD_OPTION_ARRAY,
		opts, MHD_OPTION_END);
	if (!w->daemon) {
		guard_free(w->guard);
		w->guard = NULL;
		snprintf(err, errlen,
			 "cannot serve on %s (address in use, not local, or bad TLS "
			 "certificate/key: see --log-level debug)",
			 w->cfg.listen_address);
		/* libmicrohttpd does not say why (its log does, at debug level). */
		return -EIO;
	}
	log_info("listening on %s (%s from %s), metrics at %s, %u basic auth user(s)",
		 w->cfg.listen_address,
		 !w->cert ? "plain HTTP"
		 : w->ca  ? "mTLS"
			  : "TLS",
		 w->cert ? w->cfg.tls_min_version : "-", w->cfg.metrics_path, w->cfg.n_users);
	return 0;
}
