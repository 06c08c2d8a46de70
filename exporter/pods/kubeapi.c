// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pod source's client (see kubeapi.h), after client-go's reflector (tools/cache/reflector.go
 * and tools/pager/pager.go):
 *
 * - LIST: resourceVersion "0" (the API server's watch cache) the first time, in pages of 500
 *   (limit + continue; the cache ignores limit for rv=0 on most servers and answers whole);
 *   later lists at the last resourceVersion seen, unpaged (served from the cache too) unless the
 *   first list came back in pages; a 410 on a continue page: the whole list at once; a 410 on
 *   the list itself: again at once with resourceVersion "" (a consistent read).
 * - WATCH from the list's resourceVersion, bookmarks on, timeoutSeconds random in [300, 600).
 *   A watch the server ends normally is renewed at once from the last resourceVersion (events and
 *   bookmarks move it), without a list. A refused connection or a 429: back off, watch again.
 *   Anything else (410, an ERROR event, an undecodable event, a watch closed within a second
 *   without an event): back off, list again. A watch closed within a second after events backs
 *   off too, where client-go would watch again at once.
 * - Back-off before every list but the first and before retried watches: 0.8 s doubling to a
 *   30 s cap, times 1 + U[0,1); back to 0.8 s only after 2 minutes without one.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pods/kubeapi.h"
#include "base/log.h"

#define PAGE_SIZE 500	/* the pager's */
#define MAX_PAGES 10000 /* a server handing out continue tokens for ever is no API server */
#define URL_MAX (1024 + 3 * KUBE_CONTINUE_MAX + 256)
#define LIST_TIMEOUT(k) (10L * (k)->cfg.timeout) /* a list page in all; stalled: timeout */

/* ---- decoders ---- */

static const char *jstr(struct json_object *o, const char *a, const char *b)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, a, &x))
		return NULL;
	if (b && !json_object_object_get_ex(x, b, &x))
		return NULL;
	return json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The JSON value s[0..n) holds, nothing but whitespace around it; NULL when it is none. */
static struct json_object *parse_whole(const char *s, size_t n)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (n > INT_MAX || memchr(s, '\0', n) || !(tok = json_tokener_new_ex(64)))
		return NULL;
	o = json_tokener_parse_ex(tok, s, (int)n);
	for (size_t i = o ? json_tokener_get_parse_end(tok) : n; i < n; i++) {
		if (!space(s[i])) {
			json_object_put(o);
			o = NULL;
			break;
		}
	}
	json_tokener_free(tok);
	return o;
}

int kube_pod_decode(struct json_object *o, const char *node, struct pod *p)
{
	const char *uid = jstr(o, "metadata", "uid"), *name = jstr(o, "metadata", "name");
	const char *ns = jstr(o, "metadata", "namespace"), *on = jstr(o, "spec", "nodeName");
	struct json_object *status, *cs;

	memset(p, 0, sizeof(*p));
	if (!uid || !name || !ns || strlen(uid) != POD_UID_LEN ||
	    (node && *node && on && strcmp(on, node)))
		return -1;
	strcpy(p->uid, uid);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	if (!json_object_object_get_ex(o, "status", &status) ||
	    !json_object_object_get_ex(status, "containerStatuses", &cs) ||
	    !json_object_is_type(cs, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(cs) && p->nc < MAX_CONTAINERS; i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *id = jstr(c, "containerID", NULL), *cn = jstr(c, "name", NULL);
		const char *sep = id ? strstr(id, "://") : NULL; /* "containerd://<id>" */

		if (!sep || !cn)
			continue;
		snprintf(p->c[p->nc].id, sizeof(p->c[0].id), "%s", sep + 3);
		snprintf(p->c[p->nc].name, sizeof(p->c[0].name), "%s", cn);
		p->nc++;
	}
	return 0;
}

/* Append to a buffer growing by doubling up to max; false past max or without memory. */
static bool append(char **buf, size_t *len, size_t *cap, size_t max, const char *s, size_t n)
{
	if (n > max - *len)
		return false;
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		char *b;

		while (c < *len + n)
			c *= 2;
		c = c < max ? c : max;
		b = realloc(*buf, c);
		if (!b)
			return false;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return true;
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t n,
		    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t k = nl ? (size_t)(nl - data) : n;
		int rc = 0;

		/* Only the new bytes are searched: a line in many chunks costs its length once. */
		if (!nl || l->len) {
			if (!append(&l->buf, &l->len, &l->cap, KUBE_OBJECT_MAX, data, k))
				return -1;
			if (!nl)
				return 0;
			if (l->len)
				rc = fn(arg, l->buf, l->len);
			l->len = 0;
		} else if (k) {
			rc = fn(arg, data, k); /* whole in this chunk: no copy */
		}
		if (rc)
			return rc;
		data += k + 1;
		n -= k + 1;
	}
	return 0;
}

void kube_lines_reset(struct kube_lines *l)
{
	l->len = 0;
	if (l->cap > (64u << 10)) {
		free(l->buf);
		l->buf = NULL;
		l->cap = 0;
	}
}

int kube_event_decode(const char *line, size_t len, const char *node, struct kube_event *ev)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct json_object *root = parse_whole(line, len), *obj, *code;
	const char *type = root ? jstr(root, "type", NULL) : NULL, *rv;
	int ret = -1;
	size_t t;

	memset(ev, 0, sizeof(*ev));
	if (!type || !json_object_object_get_ex(root, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object))
		goto out;
	for (t = 0; t < sizeof(types) / sizeof(types[0]) && strcmp(type, types[t]); t++)
		;
	if (t == sizeof(types) / sizeof(types[0]))
		goto out;
	ev->type = t;
	if (ev->type == KE_ERROR) {
		/* A Status object: its code says what (410: the resourceVersion is too old). */
		if (json_object_object_get_ex(obj, "code", &code))
			ev->code = json_object_get_int(code);
		ret = 0;
		goto out;
	}
	rv = jstr(obj, "metadata", "resourceVersion");
	if (rv && strlen(rv) >= sizeof(ev->rv))
		goto out;
	snprintf(ev->rv, sizeof(ev->rv), "%s", rv ? rv : "");
	if (ev->type != KE_BOOKMARK)
		ev->has_pod = !kube_pod_decode(obj, node, &ev->pod);
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

void kube_list_init(struct kube_list *d, const char *node,
		    void (*fn)(void *arg, const struct pod *p), void *arg)
{
	memset(d, 0, sizeof(*d));
	d->node = node;
	d->fn = fn;
	d->arg = arg;
}

void kube_list_free(struct kube_list *d)
{
	free(d->skel);
	free(d->item);
	d->skel = d->item = NULL;
	d->skel_cap = d->item_cap = 0;
}

static void list_item(struct kube_list *d, struct json_object *o)
{
	struct pod p;

	if (!kube_pod_decode(o, d->node, &p)) {
		d->fn(d->arg, &p);
		d->pods++;
	}
}

static void finish_item(struct kube_list *d)
{
	struct json_object *o = parse_whole(d->item, d->item_len);

	d->in_item = false;
	d->item_len = 0;
	if (!o) {
		d->bad = true;
		return;
	}
	list_item(d, o);
	json_object_put(o);
}

/* Bytes into the item being read, or else the skeleton. */
static void emit(struct kube_list *d, const char *s, size_t n)
{
	if (d->in_item ? !append(&d->item, &d->item_len, &d->item_cap, KUBE_OBJECT_MAX, s, n)
		       : !append(&d->skel, &d->skel_len, &d->skel_cap, KUBE_SKELETON_MAX, s, n))
		d->bad = true;
}

/*
 * A byte of the top-level object: into the item being read, or the skeleton. The elements of
 * the top-level "items" array go one by one to finish_item; commas between them are dropped,
 * so the skeleton keeps "items":[].
 */
static void list_byte(struct kube_list *d, char c)
{
	if (d->in_str) {
		if (d->esc)
			d->esc = false;
		else if (c == '\\')
			d->esc = true;
		else if (c == '"')
			d->in_str = d->in_key = false;
		else if (d->in_key && d->key_len < sizeof(d->key))
			d->key[d->key_len++] = c;
		if (d->in_key && c == '\\')
			d->key_len =
				sizeof(d->key); /* spelt with escapes: not the key we look for */
		goto out;
	}
	if (!d->started) {
		if (space(c))
			return;
		d->started = true;
		d->bad = c != '{';
	}
	if (d->in_items && d->depth == 2 && !d->in_item) {
		if (space(c) || c == ',')
			return;
		if (c == ']') {
			d->in_items = false;
			d->depth--;
			goto out;
		}
		d->in_item = true;
	} else if (d->in_item && d->depth == 2 && (c == ',' || c == ']')) {
		finish_item(d);
		if (c == ']') {
			d->in_items = false;
			d->depth--;
			goto out;
		}
		return;
	}
	switch (c) {
	case '"':
		d->in_str = true;
		if (d->depth == 1 && d->want_key) {
			d->in_key = true;
			d->key_len = 0;
		}
		break;
	case '[':
		if (d->depth == 1 && d->key_items) {
			d->in_items = true;
			d->key_items = false;
		}
		/* fall through */
	case '{':
		if (++d->depth > 1000)
			d->bad = true;
		d->want_key = d->depth == 1 && c == '{';
		break;
	case '}':
	case ']':
		d->bad |= --d->depth < 0;
		break;
	case ',':
		d->want_key = d->depth == 1;
		break;
	case ':':
		if (d->depth == 1 && d->want_key)
			d->key_items = d->key_len == 5 && !memcmp(d->key, "items", 5);
		d->want_key = false;
		break;
	}
out:
	emit(d, &c, 1);
}

int kube_list_feed(struct kube_list *d, const char *data, size_t n)
{
	for (size_t i = 0; i < n && !d->bad;) {
		size_t j = i;

		/* Most bytes are inside strings: copied by the run, not one by one. */
		if (d->in_str && !d->esc && !d->in_key) {
			while (j < n && data[j] != '"' && data[j] != '\\' && data[j])
				j++;
			if (j > i) {
				emit(d, data + i, j - i);
				i = j;
				continue;
			}
		}
		if (!(d->bad = data[i] == '\0'))
			list_byte(d, data[i]);
		i++;
	}
	return d->bad ? -1 : 0;
}

int kube_list_finish(struct kube_list *d)
{
	struct json_object *root, *items;
	const char *rv, *cont;
	int ret = -1;

	if (d->bad || !d->started || d->depth || d->in_str)
		return -1;
	root = parse_whole(d->skel, d->skel_len);
	if (!root || !json_object_object_get_ex(root, "items", &items) ||
	    !(json_object_is_type(items, json_type_array) ||
	      json_object_is_type(items, json_type_null)))
		goto out;
	/* Items the streaming pass did not recognise (a key spelt with escapes) are here. */
	for (size_t i = 0; items && i < json_object_array_length(items); i++)
		list_item(d, json_object_array_get_idx(items, i));
	rv = jstr(root, "metadata", "resourceVersion");
	cont = jstr(root, "metadata", "continue");
	if ((rv && strlen(rv) >= sizeof(d->rv)) || (cont && strlen(cont) >= sizeof(d->cont)))
		goto out;
	snprintf(d->rv, sizeof(d->rv), "%s", rv ? rv : "");
	snprintf(d->cont, sizeof(d->cont), "%s", cont ? cont : "");
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

double kube_backoff_next(struct kube_backoff *b, double now, double u)
{
	double d;

	if (!b->delay || now - b->last > KUBE_BACKOFF_RESET)
		b->delay = KUBE_BACKOFF_INIT;
	d = b->delay * (1 + u);
	b->delay = b->delay * 2 < KUBE_BACKOFF_CAP ? b->delay * 2 : KUBE_BACKOFF_CAP;
	b->last = now;
	return d;
}

/* ---- libcurl ---- */

/*
 * libcurl, opened when pod attribution starts: linked in, it and what it pulls in (OpenSSL,
 * Kerberos, LDAP, SSH, ...) were 3.2 MB of the resident memory of every exporter, most of
 * which never attribute pods. Kept open once loaded (OpenSSL does not support unloading).
 */
static struct {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_reset)(CURL *c);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	char *(*easy_escape)(CURL *c, const char *s, int len);
	void (*free)(void *p);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lc;
static void *lc_handle;

static int load_curl(void)
{
	static const char *const names[] = {
		"curl_global_init",    "curl_global_cleanup", "curl_easy_init",
		"curl_easy_setopt",    "curl_easy_perform",   "curl_easy_getinfo",
		"curl_easy_reset",     "curl_easy_cleanup",   "curl_easy_strerror",
		"curl_easy_escape",    "curl_free",	      "curl_slist_append",
		"curl_slist_free_all",
	};
	void **fn = (void **)&lc;
	void *h;

	_Static_assert(sizeof(lc) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
		       "one name per libcurl function");
	if (lc_handle)
		return 0;
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		log_error("pods: cannot load libcurl (Debian libcurl4): %s", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fn[i] = dlsym(h, names[i]);
		if (!fn[i]) {
			log_error("pods: libcurl.so.4 lacks %s", names[i]);
			return -1; /* h stays open: unloading libcurl is not safe either */
		}
	}
	lc_handle = h;
	return 0;
}

int kube_global_init(void)
{
	return load_curl() || lc.global_init(CURL_GLOBAL_DEFAULT) ? -1 : 0;
}

void kube_global_cleanup(void)
{
	if (lc_handle)
		lc.global_cleanup();
}

/* ---- the client ---- */

enum verb { V_LIST, V_WATCH, V_GET, NR_V };
static const char *const verbs[] = { "list", "watch", "get" };
enum { E_CONNECT, E_TIMEOUT, E_TLS, E_FORBIDDEN, E_HTTP, E_PARSE, E_GONE, E_CLOSED, E_OTHER, NR_E };
_Static_assert(NR_E == KUBE_NR_ERRORS && NR_V == KUBE_NR_VERBS, "kubeapi.h's counts");
static const char *const error_kinds[] = { "connect", "timeout", "tls",	   "forbidden", "http",
					   "parse",   "gone",	 "closed", "other" };
/* How a request ended: fine; failed; 410 Gone; failed in a way worth the same request again. */
enum result { K_OK, K_FAIL, K_GONE, K_RETRY };

struct kube_client {
	struct pods_config cfg;
	bool kubelet;
	struct kube_sink sink;
	char base[1024]; /* the list URL without paging or resourceVersion */
	CURL *curl;
	struct curl_slist *headers;
	uint64_t rand;
	/* the request in flight */
	enum verb verb;
	long status;
	enum result verdict; /* from the body: an ERROR event, something undecodable */
	unsigned events;
	struct kube_lines lines;
	struct kube_list list;
	/* the reflector's */
	char rv[KUBE_RV_MAX];
	bool rv_unavailable, paginated;
	unsigned gen;
	struct kube_backoff backoff;
	struct kube_stats *stats; /* its owner's: counts go on across clients */
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Uniform in [0, 1) (xorshift64*: jitter needs no more). */
static double uniform(struct kube_client *k)
{
	k->rand ^= k->rand >> 12;
	k->rand ^= k->rand << 25;
	k->rand ^= k->rand >> 27;
	return ((k->rand * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
}

static bool stopped(struct kube_client *k)
{
	return k->sink.stopping(k->sink.arg);
}

static void back_off(struct kube_client *k)
{
	k->sink.nap(k->sink.arg, kube_backoff_next(&k->backoff, mono(), uniform(k)));
}

/* Counted every time, logged the first time per kind. */
static void count_error(struct kube_client *k, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void count_error(struct kube_client *k, int kind, const char *fmt, ...)
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
		 error_kinds[kind], detail);
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

void kube_stats_count(struct kube_stats *s, int verb, const char *code)
{
	int i;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->n_req && (s->req[i].verb != verb || strcmp(s->req[i].code, code)); i++)
		;
	/* One code="other" series per verb: codes past the table's room join what ended so. */
	if (i == KUBE_REQ_SERIES || !strcmp(code, "other")) {
		s->other_codes[verb]++;
	} else {
		if (i == s->n_req) {
			s->req[i].verb = verb;
			snprintf(s->req[i].code, sizeof(s->req[i].code), "%s", code);
			s->n_req++;
		}
		s->req[i].n++;
	}
	pthread_mutex_unlock(&s->mu);
}

static void count_request(struct kube_client *k, long status, CURLcode rc)
{
	char code[8];

	if (status >= 100 && status <= 599)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "%s", status ? "other" : error_kinds[classify(rc)]);
	kube_stats_count(k->stats, k->verb, code);
}

static void synced(struct kube_client *k)
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
		count_error(k, E_PARSE, "an undecodable watch event");
		k->verdict = K_FAIL;
		return 1;
	}
	if (ev.type == KE_ERROR) {
		if (ev.code == 410)
			count_error(k, E_GONE,
				    "watch: resourceVersion expired (410), listing again");
		else
			count_error(k, E_HTTP, "watch: ERROR event with code %d", ev.code);
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
	synced(k);
	return 0;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct kube_client *k = arg;
	size_t n = size * nmemb;
	int rc;

	if (!k->status)
		lc.easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &k->status);
	if (k->status < 200 || k->status > 299)
		return n; /* a Status object: its HTTP code says enough */
	if (k->verb != V_WATCH) {
		if (!kube_list_feed(&k->list, data, n))
			return n;
		count_error(k, E_PARSE, "response is no PodList (or has an item over 4 MiB)");
		k->verdict = K_FAIL;
		return 0;
	}
	rc = kube_lines_feed(&k->lines, data, n, on_line, k);
	if (rc < 0) {
		count_error(k, E_PARSE, "a watch event over 4 MiB");
		k->verdict = K_FAIL;
	}
	return rc ? 0 : n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	return stopped(arg);
}

/* The first line of a file, for the bearer token; 0, or -1 when there is none. */
static int read_token(const char *path, char *buf, size_t len)
{
	FILE *f = *path ? fopen(path, "r") : NULL;

	if (!f)
		return -1;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf[0] ? 0 : -1;
}

/* GET url, its body decoded as it arrives (a PodList, or watch events). */
static enum result get(struct kube_client *k, enum verb v, const char *url, long total_timeout)
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
	lc.easy_reset(k->curl);
	lc.slist_free_all(k->headers);
	k->headers = lc.slist_append(NULL, "Accept: application/json");
	/* Bound service account tokens rotate: read for every request; never sent in clear. */
	if (https && !read_token(k->cfg.token_file, token, sizeof(token))) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		k->headers = lc.slist_append(k->headers, auth);
	}
	if (https && k->cfg.ca_file[0]) {
		/* Only this CA: no fall-back to the system's bundle nor its directory. */
		if (access(k->cfg.ca_file, R_OK)) {
			count_error(k, E_TLS,
				    "ca_file %s: %s (the system's CAs are not used instead)",
				    k->cfg.ca_file, strerror(errno));
			return K_FAIL;
		}
		lc.easy_setopt(k->curl, CURLOPT_CAINFO, k->cfg.ca_file);
		lc.easy_setopt(k->curl, CURLOPT_CAPATH, NULL);
	}
	lc.easy_setopt(k->curl, CURLOPT_URL, url);
	lc.easy_setopt(k->curl, CURLOPT_HTTPHEADER, k->headers);
	lc.easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_data);
	lc.easy_setopt(k->curl, CURLOPT_WRITEDATA, k);
	lc.easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	lc.easy_setopt(k->curl, CURLOPT_XFERINFODATA, k);
	lc.easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(k->curl, CURLOPT_CONNECTTIMEOUT, (long)k->cfg.timeout);
	lc.easy_setopt(k->curl, CURLOPT_TIMEOUT, total_timeout);
	if (v != V_WATCH) {
		/* A long list goes on while it flows; one stalled for timeout seconds does not. */
		lc.easy_setopt(k->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		lc.easy_setopt(k->curl, CURLOPT_LOW_SPEED_TIME, (long)k->cfg.timeout);
	}
	lc.easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (v == V_WATCH) {
		pthread_mutex_lock(&k->stats->mu);
		k->stats->watch_start = mono();
		pthread_mutex_unlock(&k->stats->mu);
	}
	rc = lc.easy_perform(k->curl);
	pthread_mutex_lock(&k->stats->mu);
	k->stats->watch_start = 0;
	pthread_mutex_unlock(&k->stats->mu);
	lc.easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);
	count_request(k, status, rc);
	if (stopped(k))
		return K_FAIL;
	if (status == 410) {
		count_error(k, E_GONE, "HTTP 410: resourceVersion expired");
		return K_GONE;
	}
	if (k->verdict != K_OK)
		return k->verdict; /* counted already */
	/* A watch ends when the server closes it, or at our own timeout: no error. */
	if (rc != CURLE_OK && !(v == V_WATCH && rc == CURLE_OPERATION_TIMEDOUT && status == 200)) {
		count_error(k, classify(rc), "%s", lc.easy_strerror(rc));
		return rc == CURLE_COULDNT_CONNECT ? K_RETRY : K_FAIL;
	}
	if (status == 401 || status == 403) {
		count_error(k, E_FORBIDDEN,
			    "HTTP %ld: the service account needs list and watch on pods", status);
		return K_FAIL;
	}
	if (status < 200 || status > 299) {
		count_error(k, E_HTTP, "HTTP %ld", status);
		return status == 429 ? K_RETRY : K_FAIL;
	}
	if (v != V_WATCH && kube_list_finish(&k->list)) {
		count_error(k, E_PARSE, "response is no PodList");
		return K_FAIL;
	}
	return K_OK;
}

/* base + "&name=value", value escaped; false when it does not fit. */
static bool add_param(struct kube_client *k, char *url, const char *name, const char *value)
{
	char *v = lc.easy_escape(k->curl, value, 0);
	size_t n = strlen(url);
	int w = v ? snprintf(url + n, URL_MAX - n, "&%s=%s", name, v) : -1;

	lc.free(v);
	return w >= 0 && (size_t)w < URL_MAX - n;
}

static enum result list_url(struct kube_client *k, char *url, const char *rv, bool paged,
			    const char *cont)
{
	snprintf(url, URL_MAX, "%s", k->base);
	if ((*rv && !*cont && !add_param(k, url, "resourceVersion", rv)) ||
	    (paged && !add_param(k, url, "limit", "500")) ||
	    (*cont && !add_param(k, url, "continue", cont))) {
		count_error(k, E_PARSE, "a resourceVersion or continue token too long for a URL");
		return K_FAIL;
	}
	return K_OK;
}

/* The pager: pages of PAGE_SIZE until no continue token; the list's pods have a new gen. */
static enum result list_pages(struct kube_client *k, const char *rv, bool paged, bool *paginated)
{
	char url[URL_MAX], cont[KUBE_CONTINUE_MAX] = "";
	enum result r;

	_Static_assert(PAGE_SIZE == 500, "the limit parameter above");
	*paginated = false;
	k->gen++;
	for (int page = 0; !stopped(k); page++) {
		if (page == MAX_PAGES) {
			count_error(k, E_PARSE, "more than %d pages", MAX_PAGES);
			return K_FAIL;
		}
		r = list_url(k, url, rv, paged, cont);
		if (r == K_OK)
			r = get(k, V_LIST, url, LIST_TIMEOUT(k));
		if (r == K_GONE && *cont) {
			/* The continue token expired: the whole list in one, as the pager does. */
			*cont = '\0';
			r = list_url(k, url, rv, false, "");
			if (r == K_OK)
				r = get(k, V_LIST, url, LIST_TIMEOUT(k));
			if (r == K_OK)
				*k->list.cont = '\0';
		}
		if (r != K_OK)
			return r;
		if (!*k->list.cont) {
			snprintf(k->rv, sizeof(k->rv), "%s", k->list.rv);
			k->sink.listed(k->sink.arg, k->gen);
			synced(k);
			return K_OK;
		}
		snprintf(cont, sizeof(cont), "%s", k->list.cont);
		*paginated = true;
	}
	return K_FAIL;
}

/* The reflector's list: where from, and whether in pages; 0 or -1. */
static int list(struct kube_client *k)
{
	char rv[KUBE_RV_MAX];
	bool paged, paginated;
	enum result r;

	snprintf(rv, sizeof(rv), "%s", k->rv_unavailable ? "" : *k->rv ? k->rv : "0");
	/* At a resourceVersion the cache serves only unpaged lists: no limit then. */
	paged = k->paginated || !*rv || !strcmp(rv, "0");
	r = list_pages(k, rv, paged, &paginated);
	if (r == K_GONE) {
		k->rv_unavailable = true; /* too old: the newest, from etcd, at once */
		*rv = '\0';
		r = list_pages(k, rv, true, &paginated);
	}
	if (r != K_OK)
		return -1;
	/* Pages for rv=0: this server's cache pages (or it has none); page from now on. */
	k->paginated |= paginated && !strcmp(rv, "0");
	k->rv_unavailable = false;
	return 0;
}

/* Watches from k->rv until the watch needs a new list (after a back-off). */
static void watch(struct kube_client *k)
{
	char url[URL_MAX], t[16];

	while (!stopped(k)) {
		double start = mono();
		unsigned timeout = 300 + (unsigned)(uniform(k) * 300);
		enum result r;

		snprintf(t, sizeof(t), "%u", timeout);
		snprintf(url, sizeof(url), "%s&watch=true&allowWatchBookmarks=true", k->base);
		if (!add_param(k, url, "timeoutSeconds", t) ||
		    !add_param(k, url, "resourceVersion", k->rv))
			return;
		r = get(k, V_WATCH, url, timeout + k->cfg.timeout);
		if (stopped(k))
			return;
		if (r == K_RETRY) {
			back_off(k); /* refused, 429: the same watch later, no list */
			continue;
		}
		if (r != K_OK)
			return;
		if (mono() - start < 1) {
			if (!k->events) {
				count_error(k, E_CLOSED,
					    "a watch closed within a second, no event");
				return;
			}
			back_off(k);
		}
	}
}

/* The kubelet's /pods: one GET, no paging; 0 or -1. */
static int poll_kubelet(struct kube_client *k)
{
	k->gen++;
	if (get(k, V_GET, k->cfg.kubelet_url, LIST_TIMEOUT(k)) != K_OK)
		return -1;
	k->sink.listed(k->sink.arg, k->gen);
	synced(k);
	return 0;
}

void kube_client_run(struct kube_client *k)
{
	for (bool first = true; k->curl && !stopped(k); first = false) {
		if (k->kubelet) {
			if (poll_kubelet(k))
				back_off(k);
			else
				k->sink.nap(k->sink.arg, k->cfg.refresh);
			continue;
		}
		/* client-go's wait.Until with the back-off: a delay before every list but the first */
		if (!first)
			back_off(k);
		if (!stopped(k) && !list(k))
			watch(k);
	}
}

struct kube_client *kube_client_new(const struct pods_config *c, bool kubelet,
				    const struct kube_sink *sink, struct kube_stats *stats)
{
	struct kube_client *k = calloc(1, sizeof(*k));
	char *node;

	if (!k)
		return NULL;
	k->cfg = *c;
	k->kubelet = kubelet;
	k->sink = *sink;
	k->stats = stats;
	if (getrandom(&k->rand, sizeof(k->rand), 0) != sizeof(k->rand))
		k->rand = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	k->rand |= 1;
	k->curl = lc.easy_init();
	node = k->curl ? lc.easy_escape(k->curl, c->node_name, 0) : NULL;
	snprintf(k->base, sizeof(k->base), "%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 c->api_url, node ? node : "");
	lc.free(node);
	return k;
}

void kube_client_free(struct kube_client *k)
{
	if (!k)
		return;
	if (k->curl) {
		lc.slist_free_all(k->headers);
		lc.easy_cleanup(k->curl);
	}
	free(k->lines.buf);
	kube_list_free(&k->list);
	free(k);
}

void kube_stats_render(struct kube_stats *s, bool watch, struct expo *e)
{
	uint64_t errs[NR_E], other[NR_V], n[KUBE_REQ_SERIES];
	char codes[KUBE_REQ_SERIES][8];
	int vs[KUBE_REQ_SERIES];
	double sync, start;
	int nreq;

	pthread_mutex_lock(&s->mu);
	memcpy(errs, s->errors, sizeof(errs));
	memcpy(other, s->other_codes, sizeof(other));
	nreq = s->n_req;
	for (int i = 0; i < nreq; i++) {
		vs[i] = s->req[i].verb;
		memcpy(codes[i], s->req[i].code, sizeof(codes[i]));
		n[i] = s->req[i].n;
	}
	sync = s->last_sync;
	start = s->watch_start;
	pthread_mutex_unlock(&s->mu);

	expo_family(
		e, "netstack_pods_api_requests_total", METRIC_COUNTER,
		"Requests to the pod source, by verb (list, watch, get: the kubelet's /pods) and "
		"HTTP status code (or connect, timeout, tls, other without a response).");
	for (int i = 0; i < nreq; i++) {
		struct labels l = { 0 };

		labels_add(&l, "verb", verbs[vs[i]]);
		labels_add(&l, "code", codes[i]);
		expo_u64(e, &l, n[i]);
	}
	for (int v = 0; v < NR_V; v++) {
		struct labels l = { 0 };

		if (!other[v])
			continue;
		labels_add(&l, "verb", verbs[v]);
		labels_add(&l, "code", "other");
		expo_u64(e, &l, other[v]);
	}
	expo_family(e, "netstack_pods_api_errors_total", METRIC_COUNTER,
		    "Failed requests for the node's pods, by kind of failure.");
	for (int i = 0; i < NR_E; i++) {
		struct labels l = { 0 };

		labels_add(&l, "kind", error_kinds[i]);
		expo_u64(e, &l, errs[i]);
	}
	if (watch) {
		expo_family(e, "netstack_pods_watch_age_seconds", METRIC_GAUGE,
			    "How long the current watch of the node's pods has been open; 0: none "
			    "is.");
		expo_double(e, NULL, start ? mono() - start : 0);
	}
	expo_family(e, "netstack_pods_last_sync_timestamp_seconds", METRIC_GAUGE,
		    "When the pod list was last known current (list or watch event); 0: never.");
	expo_double(e, NULL, sync);
}
