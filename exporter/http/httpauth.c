// SPDX-License-Identifier: GPL-2.0-only
/*
 * Basic auth: a request's credentials against the configured bcrypt hashes (checked by the
 * guard's worker, httpguard.c), those bcrypt accepted remembered, and the answers to the others.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/httpreply.h"
#include "http/httpauth.h"
#include "http/server.h"

/* Whether "name:pass" hashes to one of the credentials bcrypt accepted before (d: its hash). */
static bool granted_before(const struct web *w, const char *name, const char *pass,
			   unsigned char d[32])
{
	size_t ln = strlen(name), lp = strlen(pass);
	char *both = malloc(ln + lp + 2);
	bool hit = false;

	memset(d, 0, 32);
	if (!both)
		return false;
	snprintf(both, ln + lp + 2, "%s:%s", name, pass);
	if (!gnutls_hash_fast(GNUTLS_DIG_SHA256, both, ln + lp + 1, d))
		for (unsigned i = 0; i < w->n_granted && i < AUTH_CACHE; i++)
			hit |= !gnutls_memcmp(w->granted[i], d, 32);
	explicit_bzero(both, ln + lp + 2);
	free(both);
	return hit;
}

/*
 * Basic auth against the bcrypt hashes. An unknown user costs the same bcrypt run, against a
 * configured user's hash, so the answer's timing does not tell which users exist. Credentials
 * bcrypt accepted are remembered by their SHA-256 (as Prometheus' exporter-toolkit does), so a
 * scraper pays bcrypt once, not on every scrape. Others go to the guard's worker thread (the
 * connection waits suspended, the HTTP thread serves on), within a failure budget per address.
 */
enum guard_auth web_authorized(struct web *w, struct MHD_Connection *conn, struct guard_job **job,
			       unsigned *retry_after)
{
	const struct web_user *user = NULL;
	enum guard_auth ret = GUARD_AUTH_FAIL;
	char *pass = NULL, *name;
	unsigned char d[32];

	if (!w->cfg.n_users)
		return GUARD_AUTH_OK;
	name = MHD_basic_auth_get_username_password(conn, &pass);
	if (!name || !pass) {
		guard_job_drop(*job);
		*job = NULL;
	} else if (!*job && granted_before(w, name, pass, d)) {
		ret = GUARD_AUTH_OK;
	} else {
		for (unsigned i = 0; i < w->cfg.n_users; i++)
			if (same_string(name, w->cfg.users[i].name))
				user = &w->cfg.users[i];
		ret = guard_auth(w->guard, conn, job, pass,
				 user ? user->hash : w->cfg.users[0].hash, user, retry_after);
		if (ret == GUARD_AUTH_OK) {
			granted_before(w, name, pass, d);
			memcpy(w->granted[w->n_granted++ % AUTH_CACHE], d, 32);
		}
	}
	MHD_free(name);
	MHD_free(pass);
	return ret;
}

/* 429 or 503 with Retry-After: the client may try again later. */
static enum MHD_Result try_later(struct MHD_Connection *conn, unsigned status, unsigned seconds)
{
	const char *text = status == MHD_HTTP_TOO_MANY_REQUESTS ? "too many failed logins\n"
								: "busy checking passwords\n";
	struct MHD_Response *r = http_response(status, "text/plain; charset=utf-8", text,
					       strlen(text), false, MHD_RESPMEM_PERSISTENT);
	char v[16];

	snprintf(v, sizeof(v), "%u", seconds);
	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
	return http_queue(conn, status, r);
}

static enum MHD_Result ask_credentials(struct MHD_Connection *conn)
{
	static const char text[] = "unauthorized\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_basic_auth_fail_response(conn, "netstack_exporter", r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result web_refuse(struct MHD_Connection *conn, enum guard_auth why, unsigned retry)
{
	if (why == GUARD_AUTH_LIMITED)
		return try_later(conn, MHD_HTTP_TOO_MANY_REQUESTS, retry);
	if (why == GUARD_AUTH_BUSY)
		return try_later(conn, MHD_HTTP_SERVICE_UNAVAILABLE, retry);
	return ask_credentials(conn);
}
