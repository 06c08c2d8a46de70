// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "base/log.h"

#define CORE_PREFIX "SKB_DROP_REASON_"
#define SUBSYS_PREFIX "SKB_DROP_REASON_SUBSYS_"

static int reason_add(struct reason_table *t, uint32_t value, const char *name)
{
	struct reason_entry *e = realloc(t->e, (t->n + 1) * sizeof(*e));

	if (!e)
		return -ENOMEM;
	t->e = e;
	e[t->n].value = value;
	e[t->n].name = strdup(name);
	if (!e[t->n].name)
		return -ENOMEM;
	t->n++;
	return 0;
}

static int cmp_reason(const void *a, const void *b)
{
	const struct reason_entry *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static void table_init(struct reason_table *t)
{
	memset(t, 0, sizeof(*t));
	t->consumed = UINT32_MAX;
}

/* Entries of enum skb_drop_reason go in by their name less the prefix. */
static int add_core(struct reason_table *t, uint32_t v, const char *name)
{
	if (!strcmp(name, "SKB_DROP_REASON_MAX")) {
		t->max = v;
		return 0;
	}
	if (!strcmp(name, "SKB_DROP_REASON_SUBSYS_MASK"))
		return 0;
	if (!strcmp(name, "SKB_CONSUMED"))
		t->consumed = v;
	if (!strncmp(name, CORE_PREFIX, strlen(CORE_PREFIX)))
		name += strlen(CORE_PREFIX);
	else if (!strncmp(name, "SKB_", 4))
		name += 4; /* SKB_CONSUMED, SKB_NOT_DROPPED_YET */
	return reason_add(t, v, name);
}

static int scan_btf(struct reason_table *t, const struct btf *btf, bool vmlinux)
{
	int err = 0;
	__u32 n = btf__type_cnt(btf);

	for (__u32 id = 1; id < n && !err; id++) {
		const struct btf_type *bt = btf__type_by_id(btf, id);
		const char *tname;

		if (!btf_is_enum(bt))
			continue;
		tname = btf__name_by_offset(btf, bt->name_off);
		const struct btf_enum *e = btf_enum(bt);
		int vlen = btf_vlen(bt);
		size_t tl = strlen(tname);

		for (int i = 0; i < vlen && !err; i++, e++) {
			const char *name = btf__name_by_offset(btf, e->name_off);
			uint32_t v = (uint32_t)e->val;

			if (vmlinux && !strcmp(tname, "skb_drop_reason"))
				err = add_core(t, v, name);
			else if (vmlinux && !strcmp(tname, "skb_drop_reason_subsys") &&
				 !strncmp(name, SUBSYS_PREFIX, strlen(SUBSYS_PREFIX)) && v < 256 &&
				 strcmp(name, SUBSYS_PREFIX "NUM"))
				t->subsys[v] = strdup(name + strlen(SUBSYS_PREFIX));
			/* Subsystem enums (mac80211, openvswitch, ...) carry their id in high bits. */
			else if (tl > 11 && !strcmp(tname + tl - 11, "drop_reason") &&
				 strcmp(tname, "skb_drop_reason") && v >> REASON_SUBSYS_SHIFT)
				err = reason_add(t, v, name);
		}
	}
	return err;
}

int reasons_from_btf(struct reason_table *t, const struct btf *vmlinux, const char *btf_dir)
{
	struct dirent *de;
	DIR *d;
	int err;

	table_init(t);
	t->source = "btf";
	err = scan_btf(t, vmlinux, true);
	if (err)
		return err;
	if (!t->n)
		return -ENOENT;
	d = btf_dir ? opendir(btf_dir) : NULL;
	while (d && (de = readdir(d))) {
		char path[512];
		struct btf *mod;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", btf_dir, de->d_name);
		mod = btf__parse_split(path, (struct btf *)vmlinux);
		if (!mod)
			continue;
		err = scan_btf(t, mod, false);
		btf__free(mod);
		if (err)
			break;
	}
	if (d)
		closedir(d);
	qsort(t->e, t->n, sizeof(*t->e), cmp_reason);
	return err;
}

#define RST_PREFIX "SK_RST_REASON_"

int rst_reasons_from_btf(struct reason_table *t, const struct btf *btf)
{
	int id = btf__find_by_name_kind(btf, "sk_rst_reason", BTF_KIND_ENUM);
	const struct btf_type *bt = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e;
	int err = 0;

	table_init(t);
	t->source = "btf";
	if (!bt)
		return -ENOENT;
	e = btf_enum(bt);
	for (int i = 0; i < btf_vlen(bt) && !err; i++, e++) {
		const char *name = btf__name_by_offset(btf, e->name_off);

		if (strncmp(name, RST_PREFIX, strlen(RST_PREFIX)))
			continue;
		name += strlen(RST_PREFIX);
		if (!strcmp(name, "MAX"))
			t->max = (uint32_t)e->val; /* a bound, not a reason */
		else
			err = reason_add(t, (uint32_t)e->val, name);
	}
	if (!err && !t->n)
		err = -ENOENT;
	if (err) {
		reasons_free(t);
		return err;
	}
	qsort(t->e, t->n, sizeof(*t->e), cmp_reason);
	return 0;
}

int reasons_from_tracefs(struct reason_table *t, const char *format_path)
{
	char *buf = NULL, *p, name[128];
	size_t cap = 0;
	FILE *f;
	int err = -ENOENT;

	table_init(t);
	t->source = "tracefs";
	f = fopen(format_path, "r");
	if (!f)
		return -errno;
	/* The print fmt line holds __print_symbolic(REC->reason, { 2, "NOT_SPECIFIED" }, ...). */
	while (getline(&buf, &cap, f) > 0) {
		p = strstr(buf, "__print_symbolic(REC->reason");
		if (!p)
			continue;
		unsigned v;
		int used;

		err = 0;
		while (!err && (p = strchr(p, '{')) &&
		       sscanf(p, "{ %u , \"%127[^\"]\" }%n", &v, name, &used) == 2) {
			p += used;
			/* The list ends with MAX, a bound rather than a reason. */
			if (!strcmp(name, "MAX")) {
				t->max = v;
				continue;
			}
			err = reason_add(t, v, name);
			if (!strcmp(name, "CONSUMED"))
				t->consumed = v;
		}
		break;
	}
	free(buf);
	fclose(f);
	if (!err && !t->n)
		err = -ENOENT;
	if (err)
		return err;
	qsort(t->e, t->n, sizeof(*t->e), cmp_reason);
	/* Without MAX the array covers what the format lists. */
	if (!t->max || t->max > 1u << REASON_SUBSYS_SHIFT)
		t->max = t->e[t->n - 1].value + 1;
	if (t->max > 1u << REASON_SUBSYS_SHIFT)
		t->max = 1u << REASON_SUBSYS_SHIFT;
	return 0;
}

/*
 * Linux 6.16+ maps the file: one copy instead of a read() per 4 KB page (sysfs reads return
 * at most a page), 1 300 system calls for this kernel's BTF. NULL where it cannot.
 */
static struct btf *btf_from_mmap(const char *path)
{
	struct btf *btf = NULL;
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size > 0) {
		p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			btf = btf__new(p, st.st_size);
			munmap(p, st.st_size);
			if (!btf)
				btf = NULL; /* libbpf 1.x returns NULL with errno */
		}
	}
	close(fd);
	return btf;
}

static struct btf *vmlinux_btf(void)
{
	struct btf *btf = btf_from_mmap("/sys/kernel/btf/vmlinux");

	return btf ? btf : btf__load_vmlinux_btf();
}

/* Arguments of a tracepoint in BTF (its func proto less the context), -1 if it does not exist. */
static int tracepoint_args(const struct btf *btf, const char *name)
{
	char typedef_name[128];
	const struct btf_type *t;
	int id;

	snprintf(typedef_name, sizeof(typedef_name), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, typedef_name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL; /* pointer */
	t = t ? btf__type_by_id(btf, t->type) : NULL; /* func proto */
	return t && btf_is_func_proto(t) ? btf_vlen(t) - 1 : -1;
}

static bool has_enumerator(const struct btf *btf, const char *name)
{
	__u32 n = btf__type_cnt(btf);

	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (int i = 0; i < btf_vlen(t); i++, e++)
			if (!strcmp(btf__name_by_offset(btf, e->name_off), name))
				return true;
	}
	return false;
}

static void probe_features(struct kernel_features *f, const struct btf *btf)
{
	f->kfree_skb_args = tracepoint_args(btf, "kfree_skb");
	f->tcp_retransmit_skb_args = tracepoint_args(btf, "tcp_retransmit_skb");
	f->tcp_retransmit_synack_args = tracepoint_args(btf, "tcp_retransmit_synack");
	f->inet_sock_set_state_args = tracepoint_args(btf, "inet_sock_set_state");
	f->tcp_send_reset_args = tracepoint_args(btf, "tcp_send_reset");
	f->tcp_receive_reset_args = tracepoint_args(btf, "tcp_receive_reset");
	f->rdonly_cast = btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	f->sockops_rtt_cb = has_enumerator(btf, "BPF_SOCK_OPS_RTT_CB");
	f->iter_tcp_cb_flags = btf__find_by_name_kind(btf, "bpf_iter__tcp", BTF_KIND_STRUCT) > 0 &&
			       has_enumerator(btf, "TCP_BPF_SOCK_OPS_CB_FLAGS");
	/* struct bpf_map's memlock account, gone in 5.11 when maps moved to the memory cgroup. */
	f->memlock_charged = btf__find_by_name_kind(btf, "bpf_map_memory", BTF_KIND_STRUCT) > 0;
}

/* Loaded on first use, under its lock: its readers only ever see it whole. */
struct kernel_syms {
	pthread_mutex_t lock;
	bool loaded;
	struct ksyms ksyms;
	int err;
};

void kernel_init(struct kernel *k)
{
	struct btf *btf = vmlinux_btf();

	memset(k, 0, sizeof(*k));
	k->features.btf_err = btf ? 0 : errno ? -errno : -ENOENT;
	if (btf)
		probe_features(&k->features, btf);
	else
		k->features.kfree_skb_args = k->features.tcp_retransmit_skb_args =
			k->features.tcp_retransmit_synack_args = k->features.tcp_send_reset_args =
				k->features.tcp_receive_reset_args =
					k->features.inet_sock_set_state_args = -1;
	k->reasons_err = reasons_load(&k->reasons, btf);
	if (k->reasons_err && k->features.kfree_skb_args >= 0 && k->features.kfree_skb_args < 3)
		k->reasons_err = reasons_unspecified(&k->reasons);
	k->states_err = btf ? tcp_states_from_btf(&k->states, btf) : -ENOENT;
	k->rst_reasons_err = btf ? rst_reasons_from_btf(&k->rst_reasons, btf) : -ENOENT;
	btf__free(btf);
	k->syms = calloc(1, sizeof(*k->syms));
	if (k->syms)
		pthread_mutex_init(&k->syms->lock, NULL);
}

const struct ksyms *kernel_ksyms(const struct kernel *k, int *err)
{
	static const struct ksyms none;
	struct kernel_syms *y = k->syms;

	if (!y) {
		*err = -ENOMEM;
		return &none;
	}
	pthread_mutex_lock(&y->lock);
	if (!y->loaded) {
		y->err = ksyms_load(&y->ksyms, "/proc/kallsyms");
		y->loaded = true;
	}
	*err = y->err;
	pthread_mutex_unlock(&y->lock);
	return &y->ksyms;
}

void kernel_free(struct kernel *k)
{
	reasons_free(&k->reasons);
	reasons_free(&k->rst_reasons);
	tcp_states_free(&k->states);
	if (k->syms) {
		ksyms_free(&k->syms->ksyms);
		pthread_mutex_destroy(&k->syms->lock);
	}
	free(k->syms);
	k->syms = NULL;
}

int reasons_load(struct reason_table *t, const struct btf *btf)
{
	static const char *const formats[] = {
		"/sys/kernel/tracing/events/skb/kfree_skb/format",
		"/sys/kernel/debug/tracing/events/skb/kfree_skb/format",
	};
	int err = -ENOENT;

	if (btf) {
		err = reasons_from_btf(t, btf, "/sys/kernel/btf");
		if (!err)
			return 0;
		reasons_free(t);
	}
	log_warn("enum skb_drop_reason not found in kernel BTF, trying tracefs");
	for (unsigned i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		err = reasons_from_tracefs(t, formats[i]);
		if (!err)
			return 0;
		reasons_free(t);
	}
	return err;
}

int reasons_unspecified(struct reason_table *t)
{
	int err;

	table_init(t);
	err = reason_add(t, DROP_REASON_UNSPECIFIED, "NOT_SPECIFIED");
	if (err) {
		reasons_free(t);
		return err;
	}
	t->max = DROP_REASON_UNSPECIFIED + 1;
	t->source = "a kfree_skb tracepoint without reasons";
	return 0;
}

const char *reason_name(const struct reason_table *t, uint32_t value, char *buf, size_t len)
{
	struct reason_entry key = { .value = value };
	const struct reason_entry *e =
		t->n ? bsearch(&key, t->e, t->n, sizeof(*t->e), cmp_reason) : NULL;
	uint32_t subsys = value >> REASON_SUBSYS_SHIFT;

	if (e)
		return e->name;
	if (subsys && subsys < 256 && t->subsys[subsys])
		snprintf(buf, len, "%s:%u", t->subsys[subsys], value & 0xffff);
	else
		snprintf(buf, len, "%u", value);
	return buf;
}

void reasons_free(struct reason_table *t)
{
	for (unsigned i = 0; i < t->n; i++)
		free(t->e[i].name);
	for (unsigned i = 0; i < 256; i++)
		free(t->subsys[i]);
	free(t->e);
	table_init(t);
}

#define TCP_STATE_PREFIX "TCP_"

/* The TCP states' enum has no name; TCP_ESTABLISHED marks it (BPF_TCP_* and others are lookalikes). */
static bool is_tcp_state_enum(const struct btf *btf, const struct btf_type *bt)
{
	const struct btf_enum *e = btf_enum(bt);
	const char *tname = btf__name_by_offset(btf, bt->name_off);

	if (tname && *tname)
		return false;
	for (int i = 0; i < btf_vlen(bt); i++, e++)
		if (!strcmp(btf__name_by_offset(btf, e->name_off), "TCP_ESTABLISHED"))
			return true;
	return false;
}

int tcp_states_from_btf(struct tcp_states *t, const struct btf *btf)
{
	__u32 n = btf__type_cnt(btf);

	memset(t, 0, sizeof(*t));
	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *bt = btf__type_by_id(btf, id);
		const struct btf_enum *e;

		if (!btf_is_enum(bt) || !is_tcp_state_enum(btf, bt))
			continue;
		e = btf_enum(bt);
		for (int i = 0; i < btf_vlen(bt); i++, e++) {
			const char *name = btf__name_by_offset(btf, e->name_off);
			uint32_t v = (uint32_t)e->val;

			/* TCP_MAX_STATES is a bound, not a state. */
			if (strncmp(name, TCP_STATE_PREFIX, strlen(TCP_STATE_PREFIX)) ||
			    !strcmp(name, "TCP_MAX_STATES") || v >= TCP_STATES_MAX || t->name[v])
				continue;
			t->name[v] = strdup(name + strlen(TCP_STATE_PREFIX));
			if (!t->name[v]) {
				tcp_states_free(t);
				return -ENOMEM;
			}
			t->n++;
		}
		return 0;
	}
	return -ENOENT;
}

const char *tcp_state_name(const struct tcp_states *t, uint32_t value, char *buf, size_t len)
{
	if (t && value < TCP_STATES_MAX && t->name[value]) /* t: NULL before an analyzer's init */
		return t->name[value];
	snprintf(buf, len, "%u", value);
	return buf;
}

void tcp_states_free(struct tcp_states *t)
{
	for (unsigned i = 0; i < TCP_STATES_MAX; i++)
		free(t->name[i]);
	memset(t, 0, sizeof(*t));
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int ksyms_load(struct ksyms *k, const char *path)
{
	char line[512], name[256];
	size_t cap = 0;
	uint64_t addr;
	char type;
	FILE *f = fopen(path, "r");

	memset(k, 0, sizeof(*k));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3)
			continue;
		/* Functions only (weak ones too): a drop location is an address inside one. */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (k->n == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			struct ksym *s = realloc(k->s, ncap * sizeof(*s));

			if (!s)
				break;
			k->s = s;
			cap = ncap;
		}
		k->s[k->n].addr = addr;
		k->s[k->n].name = strdup(name);
		if (!k->s[k->n].name)
			break;
		k->n++;
	}
	fclose(f);
	if (k->n) /* qsort and bsearch want a real array even for zero elements */
		qsort(k->s, k->n, sizeof(*k->s), cmp_ksym);
	/* All zero addresses: kptr_restrict hides them from us. */
	if (k->n && k->s[k->n - 1].addr == 0) {
		ksyms_free(k);
		return -EPERM;
	}
	return k->n ? 0 : -ENOENT;
}

const struct ksym *ksyms_find(const struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	/* Last symbol with address <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->s[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &k->s[lo - 1] : NULL;
}

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr)
{
	const struct ksym *s = ksyms_find(k, addr);

	return s ? s->name : NULL;
}

void ksyms_free(struct ksyms *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->s[i].name);
	free(k->s);
	memset(k, 0, sizeof(*k));
}

bool kernel_at_least(unsigned major, unsigned minor)
{
	struct utsname u;
	unsigned ma = 0, mi = 0;

	return !uname(&u) && sscanf(u.release, "%u.%u", &ma, &mi) == 2 &&
	       (ma > major || (ma == major && mi >= minor));
}

/*
 * A load probe (the helper is in no BTF a program can ask): a socket filter calling bpf_loop,
 * which bpf() accepts only where the kernel has it (5.17+).
 */
bool kernel_has_bpf_loop(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_SOCKET_FILTER, BPF_FUNC_loop, NULL) == 1;
}

void kernel_raise_memlock(const struct kernel *k)
{
	struct rlimit rl, inf = { RLIM_INFINITY, RLIM_INFINITY };
	unsigned long long kib;

	if (!k->features.memlock_charged || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return;
	kib = rl.rlim_cur / 1024;
	/* Unlimited needs CAP_SYS_RESOURCE (or an unlimited hard limit); the soft one never does. */
	if (!setrlimit(RLIMIT_MEMLOCK, &inf)) {
		log_info("RLIMIT_MEMLOCK raised from %llu KiB to unlimited: kernels before 5.11 "
			 "charge BPF maps and programs to it",
			 kib);
		return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (!setrlimit(RLIMIT_MEMLOCK, &rl))
		log_info("RLIMIT_MEMLOCK raised from %llu KiB to its hard limit, %llu KiB: kernels "
			 "before 5.11 charge BPF maps and programs to it",
			 kib, (unsigned long long)rl.rlim_max / 1024);
}

const char *bpf_memlock_hint(const struct kernel *k, int err, char *buf, size_t len)
{
	struct rlimit rl;

	if (err != -EPERM || getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    !k->features.memlock_charged)
		return "";
	snprintf(buf, len,
		 "; RLIMIT_MEMLOCK is %llu KiB and kernels before 5.11 charge BPF maps and "
		 "programs to it, per user (raise it: systemd LimitMEMLOCK=infinity, ulimit -l "
		 "unlimited; in a pod CAP_SYS_RESOURCE, deploy/kubernetes/components/memlock)",
		 (unsigned long long)rl.rlim_cur / 1024);
	return buf;
}
