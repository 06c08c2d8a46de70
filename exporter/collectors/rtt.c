// SPDX-License-Identifier: GPL-2.0-only
/* TCP round-trip times: bpf/rtt.bpf.c fills log2 histograms, this file attaches and renders. */
#define _GNU_SOURCE /* setns */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "base/parse.h"
#include "rtt.h"
#include "kernel/confine.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "rtt.skel.h"

#define DEFAULT_MAX_SERIES 1024
#define CGROUP_AUTO "auto"
#define CAPS_HINT " (sockops needs CAP_BPF and CAP_NET_ADMIN; the netns label also CAP_PERFMON)"

static const char *const family_names[NR_RTT_FAMILIES] = { "ipv4", "ipv6" };
static const char *const kind_names[NR_RTT_KINDS] = { "srtt", "sample" };
static const char *const required_labels[] = { "family", NULL };
static const struct label_option optional_labels[] = {
	{ "netns", RTT_LABEL_NETNS },
	{ "rtt_kind", RTT_LABEL_KIND },
};
#define NR_OPTIONAL (sizeof(optional_labels) / sizeof(optional_labels[0]))

struct rtt_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
	char cgroup[PATH_MAX];	   /* CGROUP_AUTO: the cgroup2 root from /proc/self/mountinfo */
	bool existing_sockets;	   /* turn the callback on for connections open before start */
};
_Static_assert(sizeof(struct rtt_opts) <= COLLECTOR_OPTS_SIZE, "rtt options too large");

/* One histogram being rendered. */
struct hist {
	uint32_t netns;
	uint8_t family;
	uint8_t kind;
	bool overflow; /* netns unknown: the hash was full */
	uint64_t sum_us;
	uint64_t counts[RTT_NR_BUCKETS];
};

/* A running rtt collector. */
struct rtt {
	struct rtt_opts cfg;
	struct rtt_bpf *skel;
	struct events *events; /* owned by main */
	struct percpu_reader by_family, sums, buckets, overflow;
	double bounds[RTT_NR_BOUNDS]; /* upper bounds in seconds */
	bool existing_covered;
	bool logged_overflow;
	struct hist *hists;
	size_t hists_cap;
};

static void rtt_reset(void *opts)
{
	struct rtt_opts *o = opts;

	strcpy(o->cgroup, CGROUP_AUTO);
	o->existing_sockets = true;
}

static int rtt_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct rtt_opts *o = opts;

	if (!strcmp(key, "existing_sockets"))
		return parse_bool(value, &o->existing_sockets, err, errlen);
	if (!strcmp(key, "cgroup")) {
		if (strcmp(value, CGROUP_AUTO) && value[0] != '/') {
			snprintf(err, errlen, "expected auto or an absolute path, got '%s'", value);
			return -1;
		}
		if (strlen(value) >= sizeof(o->cgroup)) {
			snprintf(err, errlen, "path longer than %zu characters",
				 sizeof(o->cgroup) - 1);
			return -1;
		}
		/* No bytes of a longer path before it: reloads compare options whole. */
		memset(o->cgroup, 0, sizeof(o->cgroup));
		strcpy(o->cgroup, value);
		return 0;
	}
	return 1;
}

/*
 * Sockops RTT callbacks (Linux 5.3); the netns label reads the socket through skops->sk and
 * bpf_skc_to_tcp_sock (5.10, CAP_PERFMON). *iter tells whether the start-up pass can turn
 * callbacks on for open connections: iter/tcp with bpf_setsockopt(TCP_BPF_SOCK_OPS_CB_FLAGS)
 * (6.12).
 */
static int probe_kernel(const struct kernel *k, bool *iter)
{
	const struct kernel_features *f = &k->features;

	*iter = f->iter_tcp_cb_flags;
	if (f->btf_err) {
		log_error("rtt: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-f->btf_err));
		return -ENOENT;
	}
	if (!f->sockops_rtt_cb) {
		log_error("rtt: kernel has no sockops RTT callback (needs Linux 5.3 or later)");
		return -ENOENT;
	}
	return 0;
}

/* Undo the \ooo escapes of /proc/self/mountinfo paths in place. */
static void unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++, out++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out = *s;
		}
	}
	*out = '\0';
}

/* The first mount of the cgroup2 hierarchy's root ("/sys/fs/cgroup" on most systems). */
static int find_cgroup2_root(char *path, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], root[PATH_MAX], mnt[PATH_MAX], fstype[64];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		/* id parent dev root mountpoint options [optional...] - fstype source ... */
		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(sep, " - %63s", fstype) != 1)
			continue;
		if (strcmp(fstype, "cgroup2") || strcmp(root, "/"))
			continue;
		unescape_octal(mnt);
		if (strlen(mnt) < len) {
			strcpy(path, mnt);
			ret = 0;
		}
		break;
	}
	fclose(f);
	return ret;
}

static void rtt_stop(void *state)
{
	struct rtt *rt = state;

	events_unloaded(rt->events, EV_RTT);
	rtt_bpf__destroy(rt->skel);
	percpu_reader_free(&rt->by_family);
	percpu_reader_free(&rt->sums);
	percpu_reader_free(&rt->buckets);
	percpu_reader_free(&rt->overflow);
	free(rt->hists);
	free(rt);
}

/* with_iter: also the iterators over open connections; quiet: a failure is retried without. */
static int open_and_load(const struct collector_env *env, struct rtt *rt, bool with_iter,
			 bool quiet)
{
	bool netns = rt->cfg.series.label_mask & RTT_LABEL_NETNS;
	int err;

	rt->skel = rtt_bpf__open();
	if (!rt->skel) {
		err = -errno;

		log_error("rtt: cannot open BPF object: %s", strerror(-err));
		return err;
	}
	bpf_program__set_autoload(rt->cfg.series.label_mask
					  ? rt->skel->progs.tcp_rtt_sockops
					  : rt->skel->progs.tcp_rtt_sockops_labels,
				  false);
	bpf_program__set_autoload(rt->skel->progs.tcp_rtt_netns, with_iter);
	bpf_program__set_autoload(rt->skel->progs.tcp_rtt_existing, with_iter);
	rt->skel->rodata->label_mask = rt->cfg.series.label_mask;
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_by_family,
				 cpu_array_entries(1) /* a slice per element */);
	/* Without the netns label the hashes stay unused: keep them at one entry. */
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt, netns ? rt->cfg.series.max_series : 1);
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_buckets,
				 netns ? rt->cfg.series.max_series * RTT_NR_BUCKETS : 1);
	err = events_prepare(rt->events, rt->skel->obj, EV_RTT,
			     (struct sample_config *)&rt->skel->rodata->sample_cfg);
	if (!err)
		err = bpf_load(env, rt->skel->skeleton, "rtt", CAPS_HINT, quiet);
	return err;
}

/* One network namespace for the start-up pass. */
struct netns_ref {
	ino_t ino;
	char path[NAME_MAX + 16];
};

struct netns_list {
	struct netns_ref *v;
	size_t n, cap;
	dev_t nsfs; /* where namespace files live: anything else under /run/netns is skipped */
	ino_t self;
};

static int netns_add(struct netns_list *l, const char *path)
{
	struct stat st;

	/* Gone meanwhile, or not ours to read: tcp_rtt_netns tells whether it mattered. */
	if (stat(path, &st) || st.st_dev != l->nsfs)
		return 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].ino == st.st_ino)
			return 0;
	if (strlen(path) >= sizeof(l->v[0].path))
		return -ENAMETOOLONG;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct netns_ref *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].ino = st.st_ino;
	strcpy(l->v[l->n++].path, path);
	return 0;
}

/* Every network namespace with a process in it or a name under /run/netns, ours first. */
static int netns_list_build(struct netns_list *l)
{
	const char *const dirs[] = { "/run/netns", "/proc" };
	char path[sizeof(l->v[0].path)];
	struct stat st;
	int err;

	memset(l, 0, sizeof(*l));
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	l->nsfs = st.st_dev;
	l->self = st.st_ino;
	err = netns_add(l, "/proc/self/ns/net");
	for (size_t d = 0; d < 2 && !err; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *de;

		while (dir && !err && (de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			if (d == 1 && (de->d_name[0] < '0' || de->d_name[0] > '9'))
				continue;
			snprintf(path, sizeof(path), d ? "/proc/%s/ns/net" : "/run/netns/%s",
				 de->d_name);
			err = netns_add(l, path);
		}
		if (dir)
			closedir(dir);
	}
	return err;
}

struct existing_pass {
	const struct netns_list *list;
	int link_fd;
	unsigned entered;
	unsigned unreachable; /* namespaces we could not enter or iterate */
	int err;	      /* the first reason */
};

/* A thread of its own: setns() moves only the calling thread, which then just ends. */
static void *existing_worker(void *arg)
{
	struct existing_pass *p = arg;
	char buf[256];

	for (size_t i = 0; i < p->list->n; i++) {
		const struct netns_ref *ns = &p->list->v[i];
		int fd, iter_fd;
		ssize_t n;

		if (ns->ino != p->list->self) {
			fd = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT)
				continue; /* gone meanwhile */
			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				if (!p->err)
					p->err = -errno;
				p->unreachable++;
				if (fd >= 0)
					close(fd);
				continue;
			}
			close(fd);
		}
		/* The iterator walks the sockets of the namespace its creator is in. */
		iter_fd = bpf_iter_create(p->link_fd);
		if (iter_fd < 0) {
			if (!p->err)
				p->err = -errno;
			p->unreachable++;
			continue;
		}
		while ((n = read(iter_fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0) {
			if (!p->err)
				p->err = -errno;
			p->unreachable++;
		} else {
			p->entered++;
		}
		close(iter_fd);
	}
	return NULL;
}

static int cmp_ino(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* Namespaces some task is in (tcp_rtt_netns) that the list has no path for; or -errno. */
static int count_unlisted(const struct rtt *rt, const struct netns_list *l)
{
	struct bpf_link *link = bpf_program__attach_iter(rt->skel->progs.tcp_rtt_netns, NULL);
	uint32_t *v = NULL;
	size_t n = 0, cap = 0, i, j;
	int fd, err = 0, missing = 0;
	ssize_t got;

	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		err = -errno;
	while (!err) {
		if (n == cap) {
			uint32_t *nv = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		got = read(fd, v + n, (cap - n) * sizeof(*v));
		if (got < 0)
			err = -errno;
		if (got <= 0)
			break;
		n += got / sizeof(*v);
	}
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	if (!err) {
		qsort(v, n, sizeof(*v), cmp_ino);
		for (i = 0; i < n; i++) {
			if (i && v[i] == v[i - 1])
				continue;
			for (j = 0; j < l->n && l->v[j].ino != v[i]; j++)
				;
			missing += j == l->n;
		}
	}
	free(v);
	return err ? err : missing;
}

/*
 * Connections established before the sockops program was attached never see an ESTABLISHED
 * callback: run tcp_rtt_existing over every socket of every network namespace we can enter.
 * Runs after the attach, so a connection established meanwhile is covered one way or both.
 */
static void cover_existing(struct rtt *rt)
{
	struct existing_pass pass = { 0 };
	const struct rtt_existing *done = &rt->skel->bss->existing;
	struct netns_list list = { 0 };
	struct bpf_link *link = NULL;
	pthread_t thread;
	int err, unlisted = 0;

	err = netns_list_build(&list);
	if (!err) {
		unlisted = count_unlisted(rt, &list);
		link = bpf_program__attach_iter(rt->skel->progs.tcp_rtt_existing, NULL);
		if (!link)
			err = -errno;
	}
	if (!err) {
		pass.list = &list;
		pass.link_fd = bpf_link__fd(link);
		err = -pthread_create(&thread, NULL, existing_worker, &pass);
		if (!err)
			pthread_join(thread, NULL);
	}
	bpf_link__destroy(link);
	/* Done for good: free the programs, and keep them out of the per-program statistics. */
	bpf_program__unload(rt->skel->progs.tcp_rtt_netns);
	bpf_program__unload(rt->skel->progs.tcp_rtt_existing);
	free(list.v);
	if (err) {
		log_warn("rtt: cannot run over open TCP connections (%s): those are not measured "
			 "until they reconnect",
			 strerror(-err));
		return;
	}
	if (unlisted < 0) {
		/* Cannot tell whether some namespace was missed: say not covered. */
		if (!pass.err)
			pass.err = unlisted;
		pass.unreachable++;
	} else {
		pass.unreachable += unlisted;
	}
	rt->existing_covered = !pass.unreachable && !done->failed;
	if (rt->existing_covered)
		log_info("rtt: RTT callbacks turned on for %llu TCP connections open before start "
			 "(%llu were on already), in %u network namespaces",
			 (unsigned long long)done->enabled, (unsigned long long)done->already,
			 pass.entered);
	else
		log_warn("rtt: RTT callbacks turned on for %llu TCP connections open before "
			 "start in %u network namespaces, but %llu refused by the kernel and %u "
			 "namespaces not entered (%s): connections there are not measured until "
			 "they reconnect",
			 (unsigned long long)done->enabled, pass.entered,
			 (unsigned long long)done->failed, pass.unreachable,
			 pass.err   ? strerror(-pass.err)
			 : unlisted ? "no /run/netns entry and no process we may read"
				    : "bpf_setsockopt failed");
}

/* Linux 6.10 passes the measured RTT and the updated srtt to the callback; before, nothing. */
static bool callback_has_args(void)
{
	return kernel_at_least(6, 10);
}

static int rtt_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct rtt_opts *o = opts;
	struct rtt *rt;
	struct bpf_link **link;
	struct bpf_program *prog;
	char cgroup[PATH_MAX], hint[300];
	struct statfs fs;
	bool iter;
	int err, iter_err = 0, cgroup_fd = -1;

	err = probe_kernel(k, &iter);
	if (err)
		return err;
	iter = iter && o->existing_sockets;
	if (!strcmp(o->cgroup, CGROUP_AUTO)) {
		err = find_cgroup2_root(cgroup, sizeof(cgroup));
		if (err) {
			log_error("rtt: no cgroup2 mount in /proc/self/mountinfo (%s): mount one, "
				  "or set [collector.rtt] cgroup",
				  strerror(-err));
			return err;
		}
	} else {
		strcpy(cgroup, o->cgroup);
	}
	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0) {
		err = -errno;
		log_error("rtt: cannot open cgroup %s: %s", cgroup, strerror(-err));
		return err;
	}
	/* The kernel's EBADF from the attach would not say that the hierarchy is the wrong one. */
	if (!fstatfs(cgroup_fd, &fs) && fs.f_type != CGROUP2_SUPER_MAGIC) {
		const char *what = fs.f_type == CGROUP_SUPER_MAGIC ? "it is cgroup v1"
				   : fs.f_type == TMPFS_MAGIC	   ? "a tmpfs: the cgroup v1 layout"
								   : "another filesystem";

		log_error(
			"rtt: cgroup %s is not a cgroup2 mount (%s): sockops attach only to "
			"cgroup2; mount the cgroup2 hierarchy there or set [collector.rtt] cgroup "
			"to its mount (/sys/fs/cgroup/unified on the hybrid layout), see "
			"docs/collectors/rtt.md",
			cgroup, what);
		close(cgroup_fd);
		return -EINVAL;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		close(cgroup_fd);
		return -ENOMEM;
	}
	rt->cfg = *o;
	rt->events = env->events;

	err = open_and_load(env, rt, iter, iter);
	if (err && iter) {
		/*
		 * Without CAP_PERFMON, or on a kernel that refuses bpf_setsockopt in iter/tcp,
		 * measure new connections only.
		 */
		iter_err = err;
		rtt_bpf__destroy(rt->skel);
		rt->skel = NULL;
		iter = false;
		err = open_and_load(env, rt, iter, false);
	}
	if (err)
		goto cleanup;
	/* Without optional labels, the program that has no label code (bpf/rtt.bpf.c). */
	prog = rt->cfg.series.label_mask ? rt->skel->progs.tcp_rtt_sockops_labels
					 : rt->skel->progs.tcp_rtt_sockops;
	link = rt->cfg.series.label_mask ? &rt->skel->links.tcp_rtt_sockops_labels
					 : &rt->skel->links.tcp_rtt_sockops;
	*link = bpf_program__attach_cgroup(prog, cgroup_fd);
	if (!*link) {
		err = -errno;
		log_error("rtt: cannot attach sockops to cgroup %s: %s%s", cgroup, strerror(-err),
			  confine_denied_hint(err, hint, sizeof(hint)));
		goto cleanup;
	}
	err = bpf_attach(env, rt->skel->skeleton, "rtt", NULL, EV_RTT);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&rt->by_family, bpf_map__fd(rt->skel->maps.tcp_rtt_by_family),
				    RTT_ARRAY_SIZE, RTT_STRIDE);
	if (!err)
		err = percpu_reader_init(&rt->sums, bpf_map__fd(rt->skel->maps.tcp_rtt),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt));
	if (!err)
		err = percpu_reader_init(&rt->buckets, bpf_map__fd(rt->skel->maps.tcp_rtt_buckets),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt_buckets));
	if (!err)
		err = percpu_reader_init(&rt->overflow,
					 bpf_map__fd(rt->skel->maps.tcp_rtt_overflow),
					 sizeof(uint32_t), 1);
	if (err) {
		log_error("rtt: cannot allocate map buffers: %s", strerror(-err));
		goto cleanup;
	}
	for (int i = 0; i < RTT_NR_BOUNDS; i++)
		rt->bounds[i] = (double)(1ull << (RTT_MIN_SHIFT + i)) / 1e6;
	log_info("rtt: attached sockops to cgroup %s (max_series=%u)", cgroup,
		 rt->cfg.series.max_series);
	if (!callback_has_args())
		log_warn("rtt: before Linux 6.10 the RTT callback carries no values: srtt is read "
			 "as it was before the update, and rtt_kind=\"sample\" stays empty");
	close(cgroup_fd);

	*state = rt;
	if (iter)
		cover_existing(rt);
	else if (!rt->cfg.existing_sockets)
		log_info("rtt: TCP connections open before start are not measured until they "
			 "reconnect (existing_sockets = false)");
	else if (iter_err)
		log_warn("rtt: TCP connections open before start are not measured until they "
			 "reconnect: cannot load the iterators that turn their RTT callbacks on "
			 "(%s; they need CAP_PERFMON)",
			 strerror(-iter_err));
	else
		log_warn("rtt: TCP connections open before start are not measured until they "
			 "reconnect: the kernel cannot turn RTT callbacks on for them "
			 "(bpf_setsockopt TCP_BPF_SOCK_OPS_CB_FLAGS from iter/tcp, Linux 6.12+)");
	return 0;
cleanup:
	close(cgroup_fd);
	rtt_stop(rt);
	return err;
}

static int cmp_hist(const void *a, const void *b)
{
	const struct hist *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return x->kind - y->kind;
}

static struct hist *new_hist(struct rtt *rt, size_t *n, const struct rtt_key *k, bool overflow)
{
	struct hist *h = &rt->hists[(*n)++];

	memset(h, 0, sizeof(*h));
	h->family = k->family < NR_RTT_FAMILIES ? k->family : RTT_IPV4;
	h->kind = k->kind < NR_RTT_KINDS ? k->kind : RTT_KIND_SRTT;
	h->netns = k->netns;
	h->overflow = overflow;
	return h;
}

/* Histograms from the array: by family, or (netns label) what the hash had no room for. */
static void from_array(struct rtt *rt, size_t *n, int na, bool overflow_part)
{
	uint64_t v[RTT_ARRAY_SIZE] = { 0 };

	for (int i = 0; i < na; i++) {
		uint32_t idx = i;

		if (idx < RTT_ARRAY_SIZE)
			v[idx] = rt->by_family.sums[i];
	}
	for (int i = 0; i < NR_RTT_FAMILIES * NR_RTT_KINDS; i++) {
		struct rtt_key k = { .family = i % NR_RTT_FAMILIES, .kind = i / NR_RTT_FAMILIES };
		unsigned hist = RTT_HIST(overflow_part, k.kind, k.family);
		struct hist *h;
		uint64_t count = 0;

		if (k.kind != RTT_KIND_SRTT && !(rt->cfg.series.label_mask & RTT_LABEL_KIND))
			continue;
		h = new_hist(rt, n, &k, overflow_part);
		for (unsigned b = 0; b < RTT_NR_BUCKETS; b++) {
			unsigned i_count = RTT_COUNT(hist, b), i_sum = RTT_SUM(hist, b);

			h->counts[b] = v[i_count];
			h->sum_us += v[i_sum];
			count += h->counts[b];
		}
		/* Histograms by family always appear; overflow ones once used. */
		if (overflow_part && !count && !h->sum_us)
			(*n)--;
	}
}

static void render_hist(const struct rtt *rt, struct expo *e, const struct hist *h)
{
	struct labels l = { 0 };
	char netns[21];

	labels_add(&l, "family", family_names[h->family]);
	if (rt->cfg.series.label_mask & RTT_LABEL_NETNS)
		labels_add(&l, "netns", h->overflow ? OVERFLOW_LABEL : u64_str(netns, h->netns));
	if (rt->cfg.series.label_mask & RTT_LABEL_KIND)
		labels_add(&l, "rtt_kind", kind_names[h->kind]);
	expo_histogram(e, &l, rt->bounds, h->counts, RTT_NR_BOUNDS, h->sum_us / 1e6);
}

static int rtt_collect(void *state, struct expo *e)
{
	struct rtt *rt = state;
	bool netns = rt->cfg.series.label_mask & RTT_LABEL_NETNS;
	int na, ns = 0, nb = 0, no;
	size_t n = 0, nsorted;

	na = percpu_reader_read(&rt->by_family);
	if (netns) {
		ns = percpu_reader_read(&rt->sums);
		nb = percpu_reader_read(&rt->buckets);
	}
	no = percpu_reader_read(&rt->overflow);
	if (na < 0 || ns < 0 || nb < 0 || no < 0) {
		int err = na < 0 ? na : ns < 0 ? ns : nb < 0 ? nb : no;

		log_warn("rtt: cannot read maps: %s", strerror(-err));
		return -1;
	}
	if ((size_t)ns + RTT_NR_HISTS > rt->hists_cap) {
		size_t cap = (size_t)ns + RTT_NR_HISTS;
		struct hist *h = realloc(rt->hists, cap * sizeof(*h));

		if (!h)
			return -1;
		rt->hists = h;
		rt->hists_cap = cap;
	}
	if (!netns) {
		from_array(rt, &n, na, false);
	} else {
		for (int i = 0; i < ns; i++) {
			const struct rtt_key *k = (struct rtt_key *)rt->sums.keys + i;

			new_hist(rt, &n, k, false)->sum_us = rt->sums.sums[i];
		}
		qsort(rt->hists, n, sizeof(*rt->hists), cmp_hist);
		nsorted = n;
		for (int i = 0; i < nb; i++) {
			const struct rtt_key *k = (struct rtt_key *)rt->buckets.keys + i;
			struct hist key = { .family = k->family,
					    .kind = k->kind,
					    .netns = k->netns };
			struct hist *h;

			h = bsearch(&key, rt->hists, nsorted, sizeof(*rt->hists), cmp_hist);
			/* A series inserted between the two reads shows up next scrape. */
			if (h && k->bucket < RTT_NR_BUCKETS)
				h->counts[k->bucket] += rt->buckets.sums[i];
		}
		from_array(rt, &n, na, true);
		qsort(rt->hists, n, sizeof(*rt->hists), cmp_hist);
	}

	expo_family(e, "netstack_tcp_rtt_seconds", METRIC_HISTOGRAM,
		    "TCP round-trip time: the smoothed RTT (as ss shows it) each time the kernel "
		    "measures a round trip (sockops RTT callback).");
	for (size_t i = 0; i < n; i++)
		render_hist(rt, e, &rt->hists[i]);
	expo_family(e, "netstack_tcp_rtt_existing_sockets_covered", METRIC_GAUGE,
		    "1 when TCP connections open before the exporter started are measured too, 0 "
		    "when some are not until they reconnect.");
	expo_u64(e, NULL, rt->existing_covered);

	if (no == 1 && rt->overflow.sums[0])
		log_once(rt->logged_overflow, LOG_WARN,
			 "rtt: map tcp_rtt is full (max_series=%u); further histograms are "
			 "counted with netns '" OVERFLOW_LABEL "'",
			 rt->cfg.series.max_series);
	expo_map_overflow(e, "tcp_rtt", no == 1 ? rt->overflow.sums[0] : 0);
	return 0;
}

static struct bpf_object *rtt_object(void *state)
{
	return ((struct rtt *)state)->skel->obj;
}

const struct collector_ops rtt_collector = {
	.name = "rtt",
	.description = "TCP round-trip times as a histogram (sockops RTT callback)",
	.default_enabled = true,
	.sampled = EV_RTT,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = NR_OPTIONAL,
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 16,
	.reset = rtt_reset,
	.set = rtt_set,
	.start = rtt_start,
	.collect = rtt_collect,
	.stop = rtt_stop,
	.object = rtt_object,
};
