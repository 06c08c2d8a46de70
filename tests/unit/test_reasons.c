// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for exporter/kernel/kernel.c: drop reason names from the running kernel's BTF and from
 * tracefs format files (this kernel's and Linux 6.1's numbering), and kallsyms lookups.
 */
#define _GNU_SOURCE /* unshare */
#include "check.h"
#include "kernel/kernel.h"

#include <bpf/btf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#define LIVE_FORMAT "/sys/kernel/tracing/events/skb/kfree_skb/format"
#define FORMAT_618 "kfree_skb_format.linux-6.18"
#define FORMAT_61 "kfree_skb_format.linux-6.1"

/*
 * check.h's RUN knows only ok and not ok. A case that cannot run here calls SKIP(): it prints
 * "SKIPPED: ..." instead of an ok line, and the binary exits 77 (tests/run.sh's "skipped") unless
 * something failed.
 */
static char skip_reason[256];
static int skipped_total;

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		snprintf(skip_reason, sizeof(skip_reason), __VA_ARGS__);                           \
		return;                                                                            \
	} while (0)

#define RUN_CASE(fn)                                                                               \
	do {                                                                                       \
		skip_reason[0] = '\0';                                                             \
		check_case_failed = 0;                                                             \
		fn();                                                                              \
		if (skip_reason[0] && !check_case_failed) {                                        \
			printf("SKIPPED: %s: %s\n", #fn, skip_reason);                             \
			skipped_total++;                                                           \
		} else {                                                                           \
			printf("%s - %s\n", check_case_failed ? "not ok" : "ok", #fn);             \
			check_failed_total += check_case_failed;                                   \
		}                                                                                  \
	} while (0)

static struct btf *vmlinux; /* NULL: unreadable, see btf_error */
static int btf_error;
static const char *fixtures_dir; /* tests/fixtures, relative to the repository root */
static char tmpdir[] = "/tmp/test_reasons.XXXXXX";
static char release[65];

static const char *fixture(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fixtures_dir, name);
	return path;
}

/* A file in this run's temporary directory; each name gets its own buffer. */
struct tmp_path {
	char s[PATH_MAX];
};

static struct tmp_path tmp_path(const char *name)
{
	struct tmp_path p;

	snprintf(p.s, sizeof(p.s), "%s/%s", tmpdir, name);
	return p;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(2);
	}
}

/*
 * Cases that need the kernel's BTF: without it, a non-root run is skipped; as root the BTF
 * should be readable, so its absence fails.
 */
#define NEED_BTF()                                                                                 \
	do {                                                                                       \
		if (!vmlinux) {                                                                    \
			if (geteuid())                                                             \
				SKIP("kernel BTF unreadable (%s) and not root",                    \
				     strerror(btf_error));                                         \
			fprintf(stderr, "  kernel BTF unreadable as root: %s\n",                   \
				strerror(btf_error));                                              \
			check_case_failed = 1;                                                     \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/* Reference values straight from libbpf, independent of kernel.c's walk. */
static const struct btf_type *btf_enum_type(const char *enum_name)
{
	int id = btf__find_by_name_kind(vmlinux, enum_name, BTF_KIND_ENUM);

	return id > 0 ? btf__type_by_id(vmlinux, id) : NULL;
}

static bool btf_enum_value(const char *enum_name, const char *entry, uint32_t *val)
{
	const struct btf_type *t = btf_enum_type(enum_name);
	const struct btf_enum *e;

	if (!t)
		return false;
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++) {
		if (!strcmp(btf__name_by_offset(vmlinux, e->name_off), entry)) {
			*val = (uint32_t)e->val;
			return true;
		}
	}
	return false;
}

/* Reference values from a format file: find `{ N, "NAME" }` by plain string search. */
static bool format_value(const char *path, const char *name, uint32_t *val)
{
	char *buf = NULL, needle[160], *p;
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	snprintf(needle, sizeof(needle), ", \"%s\" }", name);
	while (!found && getline(&buf, &cap, f) > 0) {
		p = strstr(buf, needle);
		if (!p)
			continue;
		while (p > buf && *p != '{')
			p--;
		found = sscanf(p, "{ %" SCNu32 ",", val) == 1;
	}
	free(buf);
	fclose(f);
	return found;
}

/* The value the table gives name, by a linear scan: independent of reason_name's search. */
static bool table_value(const struct reason_table *t, const char *name, uint32_t *val)
{
	for (unsigned i = 0; i < t->n; i++) {
		if (!strcmp(t->e[i].name, name)) {
			*val = t->e[i].value;
			return true;
		}
	}
	return false;
}

/*
 * tracefs is not mounted on a fresh machine: as root, mount it in a mount namespace of this
 * process's own, so the test neither needs nor leaves a mount on the host.
 */
static bool live_format_readable(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) && !geteuid() && !unshare(CLONE_NEWNS) &&
	    !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	return !access(LIVE_FORMAT, R_OK);
}

static bool running_kernel_is(const char *version)
{
	size_t n = strlen(version);

	return !strncmp(release, version, n) && (release[n] == '.' || release[n] == '-');
}

static void check_name(const struct reason_table *t, uint32_t value, const char *want)
{
	char buf[32];

	CHECK_STR(reason_name(t, value, buf, sizeof(buf)), want);
}

/* --- the running kernel's BTF ------------------------------------------------------------- */

static void test_btf_names_match_tracefs(void)
{
	static const char *const names[] = { "NO_SOCKET", "NETFILTER_DROP", "TCP_CSUM" };
	struct reason_table t;
	bool live;

	NEED_BTF();
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	CHECK_STR(t.source, "btf");
	live = live_format_readable();
	printf("# reference for BTF names: %s\n", live ? LIVE_FORMAT : "libbpf's walk of the BTF");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char full[64];
		uint32_t got = UINT32_MAX, want = UINT32_MAX - 1;

		snprintf(full, sizeof(full), "SKB_DROP_REASON_%s", names[i]);
		CHECK(table_value(&t, names[i], &got));
		if (live)
			CHECK(format_value(LIVE_FORMAT, names[i], &want));
		else
			CHECK(btf_enum_value("skb_drop_reason", full, &want));
		if (got != want)
			fprintf(stderr, "  %s: %u from reasons_from_btf, %u in the kernel\n",
				names[i], got, want);
		CHECK(got == want);
		check_name(&t, want, names[i]);
		printf("# %s = %u\n", names[i], want);
	}
	reasons_free(&t);
}

static void test_btf_max_and_consumed(void)
{
	uint32_t max = 0, consumed = UINT32_MAX;
	struct reason_table t;

	NEED_BTF();
	CHECK(btf_enum_value("skb_drop_reason", "SKB_DROP_REASON_MAX", &max));
	if (!btf_enum_value("skb_drop_reason", "SKB_CONSUMED", &consumed))
		consumed = UINT32_MAX; /* before Linux 6.3 */
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	CHECK(max > 2);
	CHECK(t.max == max);
	CHECK(t.consumed == consumed);
	if (consumed != UINT32_MAX)
		check_name(&t, consumed, "CONSUMED");
	check_name(&t, 0, "NOT_DROPPED_YET");
	reasons_free(&t);
}

/* Every core entry is in the table by its short name and value, and nothing else is. */
static void test_btf_names_complete_without_prefix(void)
{
	const struct btf_type *bt;
	const struct btf_enum *e;
	struct reason_table t;
	unsigned expected = 0, core = 0;

	NEED_BTF();
	bt = btf_enum_type("skb_drop_reason");
	CHECK(bt);
	if (!bt)
		return;
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	e = btf_enum(bt);
	for (int i = 0; i < btf_vlen(bt); i++, e++) {
		const char *name = btf__name_by_offset(vmlinux, e->name_off), *shortname;
		uint32_t v = UINT32_MAX;

		if (!strcmp(name, "SKB_DROP_REASON_MAX") ||
		    !strcmp(name, "SKB_DROP_REASON_SUBSYS_MASK"))
			continue;
		expected++;
		if (!strncmp(name, "SKB_DROP_REASON_", 16))
			shortname = name + 16;
		else
			shortname = name + 4; /* SKB_NOT_DROPPED_YET, SKB_CONSUMED */
		if (!table_value(&t, shortname, &v) || v != (uint32_t)e->val) {
			fprintf(stderr, "  %s: missing or wrong value (%u, want %u)\n", shortname,
				v, (uint32_t)e->val);
			check_case_failed = 1;
		}
	}
	for (unsigned i = 0; i < t.n; i++) {
		/* SKB_CSUM is SKB_DROP_REASON_SKB_CSUM: only these two prefixes must be gone. */
		if (!strncmp(t.e[i].name, "SKB_DROP_REASON_", 16) ||
		    !strcmp(t.e[i].name, "SKB_CONSUMED") ||
		    !strcmp(t.e[i].name, "SKB_NOT_DROPPED_YET") || !strcmp(t.e[i].name, "MAX") ||
		    !strcmp(t.e[i].name, "SUBSYS_MASK")) {
			fprintf(stderr, "  unexpected name %s\n", t.e[i].name);
			check_case_failed = 1;
		}
		if (i)
			CHECK(t.e[i - 1].value < t.e[i].value); /* sorted, no duplicates */
		core += t.e[i].value < t.max;
	}
	CHECK(core == expected);
	printf("# %u core reasons, SKB_DROP_REASON_MAX = %u\n", core, t.max);
	reasons_free(&t);
}

static void test_btf_unknown_value_is_number(void)
{
	char want[16], small[3] = "xx";
	struct reason_table t;

	NEED_BTF();
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	CHECK(4000 >= t.max); /* else pick another value: 4000 must have no name */
	check_name(&t, 4000, "4000");
	/* SKB_DROP_REASON_MAX is a bound, not a name. */
	snprintf(want, sizeof(want), "%u", t.max);
	check_name(&t, t.max, want);
	check_name(&t, UINT32_MAX, "4294967295");
	/* A buffer too small for the number is still terminated. */
	CHECK_STR(reason_name(&t, 4000, small, sizeof(small)), "40");
	reasons_free(&t);
}

/* SKB_DROP_REASON_SUBSYS_<NAME> << 16 | code renders as "<NAME>:code", never as a core name. */
static void test_btf_subsystem_values(void)
{
	const struct btf_type *bt;
	const struct btf_enum *e;
	struct reason_table t;
	uint32_t mac80211;
	unsigned named = 0;

	NEED_BTF();
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	bt = btf_enum_type("skb_drop_reason_subsys");
	if (!bt) {
		/* Before Linux 6.4 there are no subsystems: such a value is just a number. */
		printf("# no enum skb_drop_reason_subsys in this kernel\n");
		check_name(&t, 1u << 16 | 3, "65539");
		reasons_free(&t);
		return;
	}
	e = btf_enum(bt);
	for (int i = 0; i < btf_vlen(bt); i++, e++) {
		const char *name = btf__name_by_offset(vmlinux, e->name_off);
		uint32_t id = (uint32_t)e->val;
		char want[96], buf[96];

		if (!id || !strcmp(name, "SKB_DROP_REASON_SUBSYS_NUM"))
			continue;
		snprintf(want, sizeof(want), "%s:3", name + strlen("SKB_DROP_REASON_SUBSYS_"));
		CHECK_STR(reason_name(&t, id << 16 | 3, buf, sizeof(buf)), want);
		named++;
	}
	CHECK(named > 0);
	if (btf_enum_value("skb_drop_reason_subsys", "SKB_DROP_REASON_SUBSYS_MAC80211_UNUSABLE",
			   &mac80211)) {
		char b1[64], b2[64];

		check_name(&t, mac80211 << 16 | 3, "MAC80211_UNUSABLE:3");
		/* Code 3 alone is a core reason (NO_SOCKET here): not what this value is. */
		CHECK(strcmp(reason_name(&t, mac80211 << 16 | 3, b1, sizeof(b1)),
			     reason_name(&t, 3, b2, sizeof(b2))));
	}
	/* An id the kernel does not define has no name either. */
	check_name(&t, 200u << 16 | 3, "13107203");
	reasons_free(&t);
}

/* SKB_DROP_REASON_SUBSYS_NUM counts subsystems; it is not one. */
static void test_btf_subsys_num_is_not_a_subsystem(void)
{
	struct reason_table t;
	uint32_t num;
	char want[16];

	NEED_BTF();
	if (!btf_enum_value("skb_drop_reason_subsys", "SKB_DROP_REASON_SUBSYS_NUM", &num))
		SKIP("no SKB_DROP_REASON_SUBSYS_NUM in this kernel");
	CHECK(reasons_from_btf(&t, vmlinux, NULL) == 0);
	snprintf(want, sizeof(want), "%u", num << 16 | 1);
	check_name(&t, num << 16 | 1, want);
	reasons_free(&t);
}

/* --- tracefs format files ------------------------------------------------------------------ */

/* Every pair the format lists is the BTF's, and every BTF reason the format could list is there. */
static void check_format_agrees_with_btf(const char *path)
{
	struct reason_table ft, bt;
	char buf[32];

	CHECK(reasons_from_tracefs(&ft, path) == 0);
	CHECK(reasons_from_btf(&bt, vmlinux, NULL) == 0);
	CHECK(ft.n > 0);
	for (unsigned i = 0; i < ft.n; i++) {
		const char *b = reason_name(&bt, ft.e[i].value, buf, sizeof(buf));

		if (strcmp(b, ft.e[i].name)) {
			fprintf(stderr, "  %u: tracefs says %s, BTF says %s\n", ft.e[i].value,
				ft.e[i].name, b);
			check_case_failed = 1;
		}
	}
	for (unsigned i = 0; i < bt.n; i++) {
		const char *f;

		/* tracefs lists neither "not dropped" nor "consumed", nor subsystem reasons. */
		if (bt.e[i].value == 0 || bt.e[i].value == bt.consumed || bt.e[i].value >= bt.max)
			continue;
		f = reason_name(&ft, bt.e[i].value, buf, sizeof(buf));
		if (strcmp(f, bt.e[i].name)) {
			fprintf(stderr, "  %u: BTF says %s, tracefs says %s\n", bt.e[i].value,
				bt.e[i].name, f);
			check_case_failed = 1;
		}
	}
	if (ft.max != bt.max)
		fprintf(stderr, "  max: %u from tracefs, %u (SKB_DROP_REASON_MAX) from BTF\n",
			ft.max, bt.max);
	CHECK(ft.max == bt.max);
	reasons_free(&ft);
	reasons_free(&bt);
}

static void test_tracefs_live_agrees_with_btf(void)
{
	NEED_BTF();
	if (!live_format_readable())
		SKIP("cannot read %s (%s)", LIVE_FORMAT, geteuid() ? "not root" : strerror(errno));
	check_format_agrees_with_btf(LIVE_FORMAT);
}

/* Numbers pinned from the 6.18 fixture: they hold on any machine. */
static void test_tracefs_618_fixture_numbers(void)
{
	struct reason_table t;
	uint32_t v;

	CHECK(reasons_from_tracefs(&t, fixture(FORMAT_618)) == 0);
	CHECK_STR(t.source, "tracefs");
	CHECK(table_value(&t, "NOT_SPECIFIED", &v) && v == 2);
	CHECK(table_value(&t, "NO_SOCKET", &v) && v == 3);
	CHECK(table_value(&t, "TCP_CSUM", &v) && v == 10);
	CHECK(table_value(&t, "NETFILTER_DROP", &v) && v == 12);
	CHECK(table_value(&t, "RECURSION_LIMIT", &v) && v == 127);
	check_name(&t, 12, "NETFILTER_DROP");
	check_name(&t, 0, "0");
	check_name(&t, 1, "1");
	CHECK(t.consumed == UINT32_MAX); /* the format does not list CONSUMED */
	for (unsigned i = 1; i < t.n; i++)
		CHECK(t.e[i - 1].value < t.e[i].value);
	reasons_free(&t);
}

/* Linux 6.1's numbering (tests/fixtures/README.md): the same names, other numbers. */
static void test_tracefs_61_fixture_numbers(void)
{
	static const struct {
		const char *name;
		uint32_t value; /* from 6.1's include/net/dropreason.h */
	} pinned[] = {
		{ "NOT_SPECIFIED", 1 },	     { "NO_SOCKET", 2 },    { "TCP_CSUM", 4 },
		{ "NETFILTER_DROP", 7 },     { "IP_RPFILTER", 11 }, { "PKT_TOO_BIG", 64 },
		{ "TC_CHAIN_NOTFOUND", 65 },
	};
	struct reason_table t;
	uint32_t v;

	CHECK(reasons_from_tracefs(&t, fixture(FORMAT_61)) == 0);
	CHECK_STR(t.source, "tracefs");
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		v = UINT32_MAX;
		CHECK(table_value(&t, pinned[i].name, &v));
		if (v != pinned[i].value)
			fprintf(stderr, "  %s: %u, want %u\n", pinned[i].name, v, pinned[i].value);
		CHECK(v == pinned[i].value);
		check_name(&t, pinned[i].value, pinned[i].name);
	}
	/* 12 is NETFILTER_DROP on 6.18, something else on 6.1. */
	check_name(&t, 12, "UNICAST_IN_L2_MULTICAST");
	CHECK(t.consumed == UINT32_MAX); /* 6.1 has no SKB_CONSUMED */
	/* Unknown values render as numbers: 0 is not listed, and there are no subsystems. */
	check_name(&t, 0, "0");
	check_name(&t, 4000, "4000");
	check_name(&t, 1u << 16 | 3, "65539");

	if (vmlinux && !running_kernel_is("6.1") &&
	    btf_enum_value("skb_drop_reason", "SKB_DROP_REASON_NETFILTER_DROP", &v)) {
		printf("# NETFILTER_DROP: 7 in the 6.1 fixture, %u in the running kernel (%s)\n", v,
		       release);
		CHECK(v != 7);
	}
	reasons_free(&t);
}

/* Both formats end the list with { SKB_DROP_REASON_MAX, "MAX" }: a bound, not a reason. */
static void test_tracefs_max_is_not_a_reason(void)
{
	static const struct {
		const char *file;
		uint32_t max; /* SKB_DROP_REASON_MAX of that kernel */
	} formats[] = { { FORMAT_61, 66 }, { FORMAT_618, 128 } };
	struct reason_table t;
	uint32_t v;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		char want[16];

		CHECK(reasons_from_tracefs(&t, fixture(formats[i].file)) == 0);
		if (t.max != formats[i].max)
			fprintf(stderr, "  %s: max %u, want %u\n", formats[i].file, t.max,
				formats[i].max);
		CHECK(t.max == formats[i].max);
		CHECK(!table_value(&t, "MAX", &v));
		snprintf(want, sizeof(want), "%u", formats[i].max);
		check_name(&t, formats[i].max, want);
		reasons_free(&t);
	}
}

/* Entries in any order and spacing: the table is sorted for reason_name's binary search. */
static void test_tracefs_unsorted_entries(void)
{
	struct tmp_path path = tmp_path("unsorted_format");
	struct reason_table t;

	write_text(path.s,
		   "print fmt: \"reason: %s\", __print_symbolic(REC->reason, "
		   "{ 9, \"NINE\" }, {3,\"THREE\"}, {  5 ,  \"FIVE\"  }, { 4, \"FOUR\" })\n");
	CHECK(reasons_from_tracefs(&t, path.s) == 0);
	CHECK(t.n == 4);
	for (unsigned i = 1; i < t.n; i++)
		CHECK(t.e[i - 1].value < t.e[i].value);
	check_name(&t, 3, "THREE");
	check_name(&t, 4, "FOUR");
	check_name(&t, 5, "FIVE");
	check_name(&t, 9, "NINE");
	check_name(&t, 6, "6");
	CHECK(t.max == 10);
	reasons_free(&t);
}

static void test_tracefs_rejects_bad_files(void)
{
	static const char *const bad[] = {
		/* consume_skb: no reason at all */
		"name: consume_skb\nID: 2309\nformat:\n"
		"\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"skbaddr=%p location=%pS\", REC->skbaddr, REC->location\n",
		/* kfree_skb before Linux 5.17 */
		"name: kfree_skb\nID: 1\nformat:\n"
		"print fmt: \"skbaddr=%p protocol=%u location=%p\", REC->skbaddr, "
		"REC->protocol, REC->location\n",
		/* a symbolic print of some other field */
		"print fmt: \"%s\", __print_symbolic(REC->state, { 1, \"ESTABLISHED\" })\n",
		/* the reason, but no entries */
		"print fmt: \"reason: %s\", __print_symbolic(REC->reason)\n",
		"",
	};
	struct reason_table t;
	int err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tmp_path path = tmp_path("bad_format");

		write_text(path.s, bad[i]);
		err = reasons_from_tracefs(&t, path.s);
		if (err >= 0)
			fprintf(stderr, "  bad format %zu accepted (%d, %u names)\n", i, err, t.n);
		CHECK(err < 0);
		CHECK(t.n == 0 && !t.e);
		reasons_free(&t);
	}
	CHECK(reasons_from_tracefs(&t, tmp_path("no-such-file").s) == -ENOENT);
	CHECK(t.n == 0 && !t.e);
	reasons_free(&t);
}

/* --- kallsyms ------------------------------------------------------------------------------ */

static void test_ksyms_sample(void)
{
	static const char *const text[] = { "_stext",		"first_func",  "static_helper",
					    "kfree_skb_reason", "ip_rcv_core", "nft_do_chain" };
	struct ksyms k;

	CHECK(ksyms_load(&k, fixture("kallsyms.sample")) == 0);
	CHECK(k.n == sizeof(text) / sizeof(text[0]));
	for (size_t i = 1; i < k.n; i++)
		CHECK(k.s[i - 1].addr < k.s[i].addr); /* sorted although the file is not */
	for (size_t i = 0; i < k.n; i++) {
		bool known = false;

		for (size_t j = 0; j < sizeof(text) / sizeof(text[0]); j++)
			known |= !strcmp(k.s[i].name, text[j]);
		if (!known)
			fprintf(stderr, "  unexpected symbol %s\n", k.s[i].name);
		CHECK(known);
	}
	/* Inside, at the start, at the last byte before the next one. */
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81001050), "first_func");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81001000), "first_func");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff810010ff), "first_func");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81000fff), "_stext");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81000000), "_stext");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81001100), "static_helper");
	/* Listed after its successor in the file. */
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81003123), "kfree_skb_reason");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81003800), "ip_rcv_core");
	/* A module symbol, without its [module] suffix; the last symbol covers the rest. */
	CHECK_STR(ksyms_lookup(&k, 0xffffffffc0a01010), "nft_do_chain");
	CHECK_STR(ksyms_lookup(&k, UINT64_MAX), "nft_do_chain");
	/* Below the first text symbol. */
	CHECK(ksyms_lookup(&k, 0xffffffff80ffffff) == NULL);
	CHECK(ksyms_lookup(&k, 0) == NULL);
	CHECK(ksyms_lookup(&k, 0x10) == NULL); /* not fixed_percpu_data, an 'A' symbol at 0 */
	ksyms_free(&k);
	CHECK(k.n == 0 && !k.s);
}

static void test_ksyms_data_symbols_ignored(void)
{
	struct ksyms k;

	CHECK(ksyms_load(&k, fixture("kallsyms.sample")) == 0);
	/* D, d, R, b symbols sit between static_helper and kfree_skb_reason. */
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81002000), "static_helper");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81002044), "static_helper");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81002100), "static_helper");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81004000), "ip_rcv_core");
	/* A module's data symbol below its text. */
	CHECK_STR(ksyms_lookup(&k, 0xffffffffc0a00800), "ip_rcv_core");
	ksyms_free(&k);
}

/* kptr_restrict shows every address as zero: the loader must say so, and keep nothing. */
static void test_ksyms_kptr_restrict(void)
{
	struct tmp_path path = tmp_path("kallsyms.restricted");
	char *buf = NULL;
	size_t cap = 0;
	FILE *in = fopen(fixture("kallsyms.sample"), "r"), *out = fopen(path.s, "w");
	struct ksyms k;

	CHECK(in && out);
	if (!in || !out)
		goto out;
	while (getline(&buf, &cap, in) > 16)
		fprintf(out, "0000000000000000%s", buf + 16);
	fclose(out);
	out = NULL;
	memset(&k, 0xa5, sizeof(k));
	CHECK(ksyms_load(&k, path.s) == -EPERM);
	CHECK(k.n == 0 && !k.s);
out:
	free(buf);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

static void test_ksyms_missing_or_empty(void)
{
	struct tmp_path path = tmp_path("kallsyms.data");
	struct ksyms k;

	CHECK(ksyms_load(&k, tmp_path("no-such-file").s) == -ENOENT);
	CHECK(k.n == 0 && !k.s);
	write_text(path.s, "ffffffff81002000 D some_data\nffffffff81002040 d local_data\n"
			   "not a symbol line\n");
	CHECK(ksyms_load(&k, path.s) == -ENOENT);
	CHECK(k.n == 0);
	ksyms_free(&k);
	write_text(path.s, "");
	CHECK(ksyms_load(&k, path.s) == -ENOENT);
	ksyms_free(&k);
}

/* /proc/kallsyms marks weak functions 'W' (this kernel has about 300): they are text too. */
static void test_ksyms_weak_functions(void)
{
	struct tmp_path path = tmp_path("kallsyms.weak");
	struct ksyms k;

	write_text(path.s, "ffffffff81207000 T calibrate_delay\n"
			   "ffffffff81207600 W __pfx_abort\n"
			   "ffffffff81207610 W abort\n"
			   "ffffffff81207700 T next_func\n");
	CHECK(ksyms_load(&k, path.s) == 0);
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81207620), "abort");
	CHECK_STR(ksyms_lookup(&k, 0xffffffff81207010), "calibrate_delay");
	ksyms_free(&k);
}

/* A kfree_skb tracepoint without reasons (before 5.17): one reason, as the BPF program counts it. */
static void test_unspecified_table(void)
{
	struct reason_table t;

	CHECK(reasons_unspecified(&t) == 0);
	CHECK(t.n == 1);
	CHECK(t.max == DROP_REASON_UNSPECIFIED + 1);
	CHECK(t.consumed == UINT32_MAX);
	check_name(&t, DROP_REASON_UNSPECIFIED, "NOT_SPECIFIED");
	check_name(&t, 0, "0");
	reasons_free(&t);
}

int main(void)
{
	struct utsname u;

	fixtures_dir = getenv("NETSTACK_FIXTURES") ? getenv("NETSTACK_FIXTURES") : "tests/fixtures";
	if (access(fixture(FORMAT_61), R_OK)) {
		fprintf(stderr,
			"cannot read %s: run from the repository root or set "
			"NETSTACK_FIXTURES\n",
			fixture(FORMAT_61));
		return 2;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	if (!uname(&u))
		snprintf(release, sizeof(release), "%s", u.release);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		btf_error = errno;
		printf("# kernel BTF: %s\n", strerror(btf_error));
	}

	RUN_CASE(test_btf_names_match_tracefs);
	RUN_CASE(test_btf_max_and_consumed);
	RUN_CASE(test_btf_names_complete_without_prefix);
	RUN_CASE(test_btf_unknown_value_is_number);
	RUN_CASE(test_btf_subsystem_values);
	RUN_CASE(test_btf_subsys_num_is_not_a_subsystem);
	RUN_CASE(test_tracefs_live_agrees_with_btf);
	RUN_CASE(test_tracefs_618_fixture_numbers);
	RUN_CASE(test_tracefs_61_fixture_numbers);
	RUN_CASE(test_tracefs_max_is_not_a_reason);
	RUN_CASE(test_tracefs_unsorted_entries);
	RUN_CASE(test_tracefs_rejects_bad_files);
	RUN_CASE(test_unspecified_table);
	RUN_CASE(test_ksyms_sample);
	RUN_CASE(test_ksyms_data_symbols_ignored);
	RUN_CASE(test_ksyms_kptr_restrict);
	RUN_CASE(test_ksyms_missing_or_empty);
	RUN_CASE(test_ksyms_weak_functions);

	btf__free(vmlinux);
	static const char *const made[] = { "bad_format", "kallsyms.restricted", "kallsyms.data",
					    "kallsyms.weak", "unsorted_format" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++)
		unlink(tmp_path(made[i]).s);
	if (rmdir(tmpdir))
		perror(tmpdir);
	if (skipped_total)
		printf("SKIPPED: %d case(s) did not run here, see above\n", skipped_total);
	if (check_failed_total)
		return 1;
	return skipped_total ? 77 : 0;
}
