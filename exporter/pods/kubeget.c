// SPDX-License-Identifier: GPL-2.0-only
/*
 * One request of the pod source's client: a GET with libcurl (the bearer token, the CA), its
 * body decoded as it arrives (kubedecode.c), how it ended, counted and logged once per kind.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "pods/kubeget.h"
#include "pods/kubecurl.h"
#include "pods/mono.h"

void kube_count_error(struct kube_client *k, int kind, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&k->stats->mu);
	k->stats->errors[kind]++;
	pthread_mutex_unlock(&k->stats->mu);
	log_once(k->stats->logged[kind], LOG_WARN,
		 "pods: pod source failed (%s): %s; labels keep what is known, retrying with "
		 "back-off",
		 kube_error_kinds[kind], detail);
}

static int classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return E_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return E_TIMEOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return E_TLS;
	default:
		return E_OTHER;
	}
}

static void count_request(struct kube_client *k, long status, CURLcode rc)
{
	char code[8];

	if (status >= 100 && status <= 599)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "%s",
			 status ? "other" : kube_error_kinds[classify(rc)]);
	kube_stats_count(k->stats, k->verb, code);
}

void kube_synced(struct kube_client *k)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&k->stats->mu);
	k->stats->last_sync = ts.tv_sec + ts.tv_nsec / 1e9;
	pthread_mutex_unlock(&k->stats->mu);
}

static void list_pod(void *arg, const struct pod *p)
{
	struct kube_client *k = arg;
	struct pod q = *p;

	q.gen = k->gen;
	k->sink.pod(k->sink.arg, &q);
}

/* A watch line: applied, or the watch ends (1) with k->verdict saying why. */
static int on_line(void *arg, const char *line, size_t len)
{
	struct kube_client *k = arg;
	struct kube_event ev;

	if (kube_event_decode(line, len, k->cfg.node_name, &ev)) {
		kube_count_error(k, E_PARSE, "an undecodable watch event");
		k->verdict = K_FAIL;
		return 1;
	}
	if (ev.type == KE_ERROR) {
		if (ev.code == 410)
			kube_count_error(k, E_GONE,
					 "watch: resourceVersion expired (410), listing again");
		else
			kube_count_error(k, E_HTTP, "watch: ERROR event with code %d", ev.code);
		k->verdict = ev.code == 410 ? K_GONE : K_FAIL;
		return 1;
	}
	k->events++;
	if (ev.rv[0])
		snprintf(k->rv, sizeof(k->rv), "%s", ev.rv);
	if (ev.has_pod) {
		if (ev.type == KE_DELETED)
			ev.pod.deleted = mono();
		list_pod(k, &ev.pod);
		k->sink.changed(k->sink.arg);
	}
	kube_synced(k);
	return 0;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct kube_client *k = arg;
	size_t n = size * nmemb;
	int rc;

	if (!k->status)
		kube_lc.easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &k->status);
	if (k->status < 200 || k->status > 299)
		return n; /* a Status object: its HTTP code says enough */
	if (k->verb != V_WATCH) {
		if (!kube_list_feed(&k->list, data, n))
			return n;
		kube_count_error(k, E_PARSE, "response is no PodList (or has an item over 4 MiB)");
		k->verdict = K_FAIL;
		return 0;
	}
	rc = kube_lines_feed(&k->lines, data, n, on_line, k);
	if (rc < 0) {
		kube_count_error(k, E_PARSE, "a watch event over 4 MiB");
		k->verdict = K_FAIL;
	}
	return rc ? 0 : n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	return kube_stopped(arg);
}

/* The first line of a file, for the bearer token; 0, or -errno (-ENOENT: none). */
static int read_token(const char *path, char *buf, size_t len)
{
	FILE *f = *path ? fopen(path, "r") : NULL;

	if (!f)
		return *path ? -errno : -ENOENT;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf[0] ? 0 : -ENOENT;
}

enum result kube_get(struct kube_client *k, enum verb v, const char *url, long total_timeout)
{
	bool https = !strncmp(url, "https://", 8);
	char token[4096], auth[4200];
	CURLcode rc;
	long status = 0;

	k->verb = v;
	k->status = 0;
	k->verdict = K_OK;
	k->events = 0;
	kube_lines_reset(&k->lines);
	kube_list_free(&k->list);
	kube_list_init(&k->list, k->kubelet ? "" : k->cfg.node_name, list_pod, k);
	kube_lc.easy_reset(k->curl);
	kube_lc.slist_free_all(k->headers);
	k->headers = kube_lc.slist_append(NULL, "Accept: application/json");
	/* Bound service account tokens rotate: read for every request; never sent in clear. */
	if (https && !read_token(k->cfg.token_file, token, sizeof(token))) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		k->headers = kube_lc.slist_append(k->headers, auth);
	}
	if (https && k->cfg.ca_file[0]) {
		/* Only this CA: no fall-back to the system's bundle nor its directory. */
		if (access(k->cfg.ca_file, R_OK)) {
			kube_count_error(k, E_TLS,
					 "ca_file %s: %s (the system's CAs are not used instead)",
					 k->cfg.ca_file, strerror(errno));
			return K_FAIL;
		}
		kube_lc.easy_setopt(k->curl, CURLOPT_CAINFO, k->cfg.ca_file);
		kube_lc.easy_setopt(k->curl, CURLOPT_CAPATH, NULL);
	}
	kube_lc.easy_setopt(k->curl, CURLOPT_URL, url);
	kube_lc.easy_setopt(k->curl, CURLOPT_HTTPHEADER, k->headers);
	kube_lc.easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_data);
	kube_lc.easy_setopt(k->curl, CURLOPT_WRITEDATA, k);
	kube_lc.easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
	kube_lc.easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	kube_lc.easy_setopt(k->curl, CURLOPT_XFERINFODATA, k);
	kube_lc.easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L);
	kube_lc.easy_setopt(k->curl, CURLOPT_CONNECTTIMEOUT, (long)k->cfg.timeout);
	kube_lc.easy_setopt(k->curl, CURLOPT_TIMEOUT, total_timeout);
	if (v != V_WATCH) {
		/* A long list goes on while it flows; one stalled for timeout seconds does not. */
		kube_lc.easy_setopt(k->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		kube_lc.easy_setopt(k->curl, CURLOPT_LOW_SPEED_TIME, (long)k->cfg.timeout);
	}
	kube_lc.easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (v == V_WATCH) {
		pthread_mutex_lock(&k->stats->mu);
		k->stats->watch_start = mono();
		pthread_mutex_unlock(&k->stats->mu);
	}
	rc = kube_lc.easy_perform(k->curl);
	pthread_mutex_lock(&k->stats->mu);
	k->stats->watch_start = 0;
	pthread_mutex_unlock(&k->stats->mu);
	kube_lc.easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);
	count_request(k, status, rc);
	if (kube_stopped(k))
		return K_FAIL;
	if (status == 410) {
		kube_count_error(k, E_GONE, "HTTP 410: resourceVersion expired");
		return K_GONE;
	}
	if (k->verdict != K_OK)
		return k->verdict; /* counted already */
	/* A watch ends when the server closes it, or at our own timeout: no error. */
	if (rc != CURLE_OK && !(v == V_WATCH && rc == CURLE_OPERATION_TIMEDOUT && status == 200)) {
		kube_count_error(k, classify(rc), "%s", kube_lc.easy_strerror(rc));
		return rc == CURLE_COULDNT_CONNECT ? K_RETRY : K_FAIL;
	}
	if (status == 401 || status == 403) {
		kube_count_error(k, E_FORBIDDEN,
				 "HTTP %ld: the service account needs list and watch on pods",
				 status);
		return K_FAIL;
	}
	if (status < 200 || status > 299) {
		kube_count_error(k, E_HTTP, "HTTP %ld", status);
		return status == 429 ? K_RETRY : K_FAIL;
	}
	if (v != V_WATCH && kube_list_finish(&k->list)) {
		kube_count_error(k, E_PARSE, "response is no PodList");
		return K_FAIL;
	}
	return K_OK;
}
