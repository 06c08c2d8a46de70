// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for the Kubernetes API server's pod endpoints, over HTTPS, for the pods tests.
 *
 *   fake_apiserver PORT CERT KEY PODLIST EVENTS MODE [TOKEN]
 *
 * GET /api/v1/pods?...            the PodList file, as the API server answers a list
 * GET /api/v1/pods?...&watch=true the lines of EVENTS (one JSON watch event each), streamed as
 *                                 they are appended, until timeoutSeconds or shutdown
 * MODE: ok, garbage (200 with a body that is no JSON), forbidden (403 Status), slow (answers
 * after 30 s). With TOKEN, requests without "Authorization: Bearer TOKEN" get 401.
 * Every request is logged on stdout: "GET list" or "GET watch rv=N".
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *podlist, *events, *mode, *token;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

struct stream {
	long offset;	 /* in EVENTS */
	time_t deadline; /* end of the watch */
};

/* Blocks (thread per connection) until a whole new line is in EVENTS or the watch ends. */
static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;

	(void)pos;
	while (time(NULL) < s->deadline) {
		FILE *f = fopen(events, "r");
		char line[8192];

		if (f && !fseek(f, s->offset, SEEK_SET) && fgets(line, sizeof(line), f) &&
		    strchr(line, '\n')) {
			size_t n = strlen(line);

			fclose(f);
			if (n > max)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			memcpy(buf, line, n); /* a body chunk: no terminator wanted */ // NOLINT
			s->offset += n;
			return n;
		}
		if (f)
			fclose(f);
		usleep(50000);
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
	const char *rv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
	const char *to = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	char want[512];

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	printf("%s %s%s%s\n", method, watch ? "watch rv=" : "list", watch && rv ? rv : "",
	       strcmp(url, "/api/v1/pods") ? " (unknown path)" : "");
	fflush(stdout);
	if (strcmp(method, "GET"))
		return reply(c, 405, "{}");
	if (strcmp(url, "/api/v1/pods"))
		return reply(c, 404, "{\"kind\":\"Status\",\"code\":404}");
	snprintf(want, sizeof(want), "Bearer %s", token ? token : "");
	if (token && (!auth || strcmp(auth, want)))
		return reply(c, 401,
			     "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\"}");
	if (!strcmp(mode, "forbidden"))
		return reply(c, 403, "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\"}");
	if (!strcmp(mode, "garbage"))
		return reply(c, 200, "<html>this is no PodList");
	if (!strcmp(mode, "slow"))
		sleep(30);
	if (watch && !strcmp(watch, "true")) {
		struct stream *s = calloc(1, sizeof(*s));
		struct MHD_Response *r;
		enum MHD_Result ret;

		if (!s)
			return MHD_NO;
		s->deadline = time(NULL) + (to ? atoi(to) : 60);
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, watch_reader, s,
						      free);
		MHD_add_response_header(r, "Content-Type", "application/json");
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	} else {
		char *body = slurp(podlist);
		enum MHD_Result ret = reply(c, body ? 200 : 500, body ? body : "{}");

		free(body);
		return ret;
	}
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *d;
	char *cert, *key;
	sigset_t sigs;
	int sig;

	if (argc < 7) {
		fprintf(stderr, "usage: %s PORT CERT KEY PODLIST EVENTS MODE [TOKEN]\n", argv[0]);
		return 2;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		fprintf(stderr, "libmicrohttpd built without TLS\n");
		return 77;
	}
	cert = slurp(argv[2]);
	key = slurp(argv[3]);
	podlist = argv[4];
	events = argv[5];
	mode = argv[6];
	token = argc > 7 ? argv[7] : NULL;
	if (!cert || !key) {
		fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]);
		return 1;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_TLS | MHD_USE_ERROR_LOG,
			     (uint16_t)atoi(argv[1]), NULL, NULL, handle, NULL,
			     MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "cannot listen on port %s\n", argv[1]);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	sigwait(&sigs, &sig);
	/* Watches block in their reader: do not wait for them. */
	_exit(0);
}
