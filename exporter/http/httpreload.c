// SPDX-License-Identifier: GPL-2.0-only
/*
 * A reload: the new configuration's daemon made and checked, started beside the running one on
 * the same socket, then the old one retired.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/httpreload.h"
#include "http/httpweb.h"

struct web *http_prepare(const struct web_config *cfg, char *err, size_t errlen)
{
	return web_new(cfg, err, errlen);
}

void http_discard(struct web *w)
{
	web_free(w);
}

/* Close fd unless libmicrohttpd did: only while it still is the socket with inode ino. */
static void close_if_ours(int fd, ino_t ino)
{
	struct stat st;

	if (!fstat(fd, &st) && S_ISSOCK(st.st_mode) && st.st_ino == ino)
		close(fd);
}

int http_begin(struct http *h, struct web *w, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(h->active->daemon, MHD_DAEMON_INFO_LISTEN_FD);
	char why[400];
	struct stat st;
	int fd, ret;

	w->h = h;
	strcpy(w->cfg.listen_address, h->active->cfg.listen_address);
	/*
	 * The new daemon gets a duplicate of the listening socket: libmicrohttpd closes what it
	 * was handed when it fails to start, and the running daemon must keep its own.
	 */
	errno = EBADF;
	fd = info ? fcntl(info->listen_fd, F_DUPFD_CLOEXEC, 3) : -1;
	/* Non-blocking (shared by both): one daemon's accept must never wait for the other's. */
	if (fd < 0 || fstat(fd, &st) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		ret = -errno;
		snprintf(err, errlen, "[web] cannot duplicate the listening socket: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		web_free(w);
		return ret;
	}
	ret = web_start(w, fd, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "[web] %s", why);
		close_if_ours(fd, st.st_ino);
		web_free(w);
		return ret;
	}
	/* Both accept on the socket until http_retire. */
	h->retiring = h->active;
	h->active = w;
	return 0;
}

/* Up to 1 s for the requests of a quiesced daemon to finish (idle keep-alives do not wait). */
static void drain(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info;

	for (int i = 0; i < 100; i++) {
		info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!info || !info->num_connections)
			return;
		usleep(10000);
	}
}

void http_retire(struct http *h)
{
	struct web *old = h->retiring;
	MHD_socket fd;

	if (!old)
		return;
	h->retiring = NULL;
	/* Stop accepting; the socket (its own duplicate) is closed once its thread is gone. */
	fd = MHD_quiesce_daemon(old->daemon);
	drain(old->daemon);
	web_stop(old);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	web_free(old);
}
