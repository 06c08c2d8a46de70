// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for TCP state names (exporter/kernel/kernel.c): the running kernel's BTF against the
 * UAPI's BPF_TCP_* mirror of the states, and hand-made BTF with other numbering, lookalike enums
 * and no states at all. The TCP reset reasons (enum sk_rst_reason) from the running kernel and
 * from hand-made BTF. Also the retrans and resets collectors' configuration keys.
 */
#include "check.h"
#include "collectors/collector.h"
#include "kernel/kernel.h"

#include <bpf/btf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "retrans.h" /* after linux/bpf.h: __u32 */

static struct btf *vmlinux; /* NULL: unreadable here, and the live cases are skipped */

static void check_name(const struct tcp_states *t, uint32_t value, const char *want)
{
	char buf[16];

	CHECK_STR(tcp_state_name(t, value, buf, sizeof(buf)), want);
}

/* BTF with the given enums; each is a name ("" for anonymous) and NULL-terminated entries. */
struct entry {
	const char *name;
	int64_t value;
};

static struct btf *make_btf(const char *const *enum_names, const struct entry *const *entries,
			    int n)
{
	struct btf *btf = btf__new_empty();

	for (int i = 0; btf && i < n; i++) {
		if (btf__add_enum(btf, enum_names[i], 4) < 0)
			goto fail;
		for (const struct entry *e = entries[i]; e->name; e++)
			if (btf__add_enum_value(btf, e->name, e->value))
				goto fail;
	}
	return btf;
fail:
	btf__free(btf);
	return NULL;
}

/* --- the running kernel -------------------------------------------------------------------- */

/* include/uapi/linux/bpf.h promises BPF_TCP_* equal the kernel's TCP states. */
static void test_live_names_match_uapi(void)
{
	static const struct {
		uint32_t value;
		const char *name;
	} want[] = {
		{ BPF_TCP_ESTABLISHED, "ESTABLISHED" },
		{ BPF_TCP_SYN_SENT, "SYN_SENT" },
		{ BPF_TCP_SYN_RECV, "SYN_RECV" },
		{ BPF_TCP_FIN_WAIT1, "FIN_WAIT1" },
		{ BPF_TCP_FIN_WAIT2, "FIN_WAIT2" },
		{ BPF_TCP_TIME_WAIT, "TIME_WAIT" },
		{ BPF_TCP_CLOSE, "CLOSE" },
		{ BPF_TCP_CLOSE_WAIT, "CLOSE_WAIT" },
		{ BPF_TCP_LAST_ACK, "LAST_ACK" },
		{ BPF_TCP_LISTEN, "LISTEN" },
		{ BPF_TCP_CLOSING, "CLOSING" },
		{ BPF_TCP_NEW_SYN_RECV, "NEW_SYN_RECV" },
	};
	struct tcp_states t;

	CHECK(tcp_states_from_btf(&t, vmlinux) == 0);
	CHECK(t.n >= sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		check_name(&t, want[i].value, want[i].name);
	tcp_states_free(&t);
}

static void test_live_bound_and_prefix(void)
{
	struct tcp_states t;
	unsigned named = 0;

	CHECK(tcp_states_from_btf(&t, vmlinux) == 0);
	check_name(&t, 0, "0"); /* states start at 1 */
	for (unsigned v = 0; v < TCP_STATES_MAX; v++) {
		if (!t.name[v])
			continue;
		named++;
		CHECK(strncmp(t.name[v], "TCP_", 4) && !strstr(t.name[v], "MAX"));
	}
	CHECK(named == t.n);
	/* TCP_MAX_STATES is a bound: the value right after the last state has no name. */
	CHECK(t.n > 0 && !t.name[t.n + 1] && t.name[t.n]);
	tcp_states_free(&t);
}

static void test_live_load_and_unknown(void)
{
	const struct ksyms *syms;
	struct kernel k;
	struct tcp_states t;
	int err, err2;

	/* The shared context: its names and features outlive the BTF they were read from. */
	kernel_init(&k);
	CHECK(k.states_err == 0 && k.reasons_err == 0 && k.reasons.n > 0);
	check_name(&k.states, BPF_TCP_LISTEN, "LISTEN");
	check_name(&k.states, 200, "200");
	check_name(&k.states, TCP_STATES_MAX, "256");
	check_name(&k.states, UINT32_MAX, "4294967295");
	/* What every kernel the exporter supports (5.17+) has. */
	CHECK(k.features.btf_err == 0 && k.features.kfree_skb_args >= 3 &&
	      k.features.tcp_retransmit_skb_args >= 2 && k.features.sockops_rtt_cb);
	CHECK(k.features.tcp_retransmit_synack_args >= 2);
	/* kallsyms: read on first use, once; the same table after. */
	syms = kernel_ksyms(&k, &err);
	CHECK(kernel_ksyms(&k, &err2) == syms && err2 == err);
	CHECK(err ? syms->n == 0 : syms->n > 1000);
	kernel_free(&k);

	CHECK(tcp_states_from_btf(&t, vmlinux) == 0);
	tcp_states_free(&t);
	CHECK(t.n == 0 && !t.name[BPF_TCP_LISTEN]);
	tcp_states_free(&t); /* twice is harmless */
}

/* --- hand-made BTF ------------------------------------------------------------------------- */

static void test_other_numbering_and_lookalikes(void)
{
	/* Lookalikes first: a UAPI-style mirror, a named enum and a prefix-only match. */
	static const struct entry bpf_mirror[] = { { "BPF_TCP_ESTABLISHED", 1 },
						   { "BPF_TCP_LISTEN", 10 },
						   { NULL, 0 } };
	static const struct entry named[] = { { "TCP_ESTABLISHED", 3 }, { NULL, 0 } };
	static const struct entry nf[] = { { "NF_CT_TCP_ESTABLISHED", 4 }, { NULL, 0 } };
	static const struct entry states[] = { { "TCP_LISTEN", 2 },	  { "TCP_ESTABLISHED", 7 },
					       { "TCP_NEW_STATE", 9 },	  { "NOT_A_STATE", 5 },
					       { "TCP_MAX_STATES", 10 },  { "TCP_HUGE", 300 },
					       { "TCP_LISTEN_AGAIN", 2 }, { NULL, 0 } };
	static const char *const names[] = { "", "tcp_lookalike", "", "" };
	static const struct entry *const entries[] = { bpf_mirror, named, nf, states };
	struct btf *btf = make_btf(names, entries, 4);
	struct tcp_states t;

	CHECK(btf);
	if (!btf)
		return;
	CHECK(tcp_states_from_btf(&t, btf) == 0);
	CHECK(t.n == 3);
	check_name(&t, 7, "ESTABLISHED");
	check_name(&t, 2, "LISTEN"); /* the first name of a value wins */
	check_name(&t, 9, "NEW_STATE");
	check_name(&t, 1, "1");
	check_name(&t, 3, "3");
	check_name(&t, 5, "5");
	check_name(&t, 10, "10");
	check_name(&t, 300, "300");
	tcp_states_free(&t);
	btf__free(btf);
}

static void test_no_state_enum(void)
{
	static const struct entry mirror[] = { { "BPF_TCP_ESTABLISHED", 1 }, { NULL, 0 } };
	static const struct entry named[] = { { "TCP_ESTABLISHED", 1 }, { NULL, 0 } };
	static const char *const names[] = { "", "named" };
	static const struct entry *const entries[] = { mirror, named };
	struct btf *btf = make_btf(names, entries, 2);
	struct tcp_states t;

	CHECK(btf);
	if (!btf)
		return;
	CHECK(tcp_states_from_btf(&t, btf) == -ENOENT);
	CHECK(t.n == 0);
	check_name(&t, 1, "1");
	tcp_states_free(&t);
	btf__free(btf);
}

static void test_short_buffer(void)
{
	struct tcp_states t = { 0 };
	char buf[3];

	/* Truncated, never overflowing. */
	CHECK_STR(tcp_state_name(&t, 12345, buf, sizeof(buf)), "12");
}

/* --- reset reasons -------------------------------------------------------------------------- */

/* The running kernel: 6.10+ has the enum and a third argument of tcp_send_reset, else neither. */
static void test_live_rst_reasons(void)
{
	struct kernel k;
	char buf[16];

	kernel_init(&k);
	CHECK(k.features.tcp_send_reset_args >= 2 && k.features.tcp_receive_reset_args >= 1);
	CHECK((k.features.tcp_send_reset_args >= 3) == (k.rst_reasons_err == 0));
	if (!k.rst_reasons_err) {
		CHECK_STR(reason_name(&k.rst_reasons, 0, buf, sizeof(buf)), "NOT_SPECIFIED");
		CHECK_STR(reason_name(&k.rst_reasons, 1, buf, sizeof(buf)), "NO_SOCKET");
		/* MAX is a bound, not a reason: its value renders as a number. */
		CHECK(k.rst_reasons.max == k.rst_reasons.n);
		CHECK_STR(reason_name(&k.rst_reasons, k.rst_reasons.max, buf, sizeof(buf)),
			  k.rst_reasons.max == 25 ? "25" : buf);
	}
	kernel_free(&k);
}

static void test_rst_reasons_other_numbering(void)
{
	static const struct entry rst[] = { { "SK_RST_REASON_NO_SOCKET", 7 },
					    { "SK_RST_REASON_NOT_SPECIFIED", 3 },
					    { "SK_RST_REASON_MAX", 9 },
					    { NULL, 0 } };
	static const struct entry other[] = { { "SK_RST_REASON_LOOKALIKE", 1 }, { NULL, 0 } };
	const char *names[] = { "sk_rst_reason_lookalike", "sk_rst_reason" };
	const struct entry *entries[] = { other, rst };
	struct btf *btf = make_btf(names, entries, 2);
	struct reason_table t;
	char buf[16];

	CHECK(btf != NULL);
	if (!btf)
		return;
	CHECK(rst_reasons_from_btf(&t, btf) == 0);
	CHECK(t.n == 2 && t.max == 9);
	CHECK_STR(reason_name(&t, 7, buf, sizeof(buf)), "NO_SOCKET");
	CHECK_STR(reason_name(&t, 3, buf, sizeof(buf)), "NOT_SPECIFIED");
	CHECK_STR(reason_name(&t, 1, buf, sizeof(buf)), "1");
	CHECK_STR(reason_name(&t, 9, buf, sizeof(buf)), "9");
	reasons_free(&t);
	btf__free(btf);

	/* A kernel before 6.10: no such enum. */
	btf = make_btf(names, entries, 1);
	CHECK(btf && rst_reasons_from_btf(&t, btf) == -ENOENT && t.n == 0);
	reasons_free(&t);
	btf__free(btf);
}

/* --- [collector.resets] keys --------------------------------------------------------------- */

static void test_resets_config_keys(void)
{
	const struct collector_ops *c = collector_find("resets");
	struct collector_opts o = { 0 };
	void *opts = o.v;
	char err[256];

	CHECK(c && c->default_enabled);
	if (!c)
		return;
	collector_defaults(c, &o);
	CHECK(collector_set(c, opts, "labels", "family,reason,state", err, sizeof(err)) == 0);
	CHECK(collector_set(c, opts, "labels", "state reason\tfamily, netns,", err, sizeof(err)) ==
	      0);
	CHECK(collector_set(c, opts, "labels", "family,reason,state,kind", err, sizeof(err)) ==
	      -EINVAL);
	CHECK_STR(err, "unknown label 'kind' (known: family, reason, state, netns)");
	CHECK(collector_set(c, opts, "labels", "family,state,netns", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "labels must include family, reason and state");
	CHECK(collector_set(c, opts, "max_series", "1", err, sizeof(err)) == 0);
	CHECK(collector_set(c, opts, "max_series", "0", err, sizeof(err)) == -EINVAL);
	CHECK(collector_set(c, opts, "kind", "x", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "unknown key 'kind' in [collector.resets]");
	collector_defaults(c, &o);
}

/* --- [collector.retrans] keys -------------------------------------------------------------- */

static void test_retrans_config_keys(void)
{
	const struct collector_ops *c = collector_find("retrans");
	struct collector_opts o = { 0 };
	void *opts = o.v;
	char err[256];

	CHECK(c && c->default_enabled);
	if (!c)
		return;
	collector_defaults(c, &o);
	/* cause is on by default, and a labels list without it turns it off. */
	CHECK(((struct series_opts *)opts)->label_mask == RT_LABEL_CAUSE);
	CHECK(collector_set(c, opts, "labels", "family,kind,state", err, sizeof(err)) == 0);
	CHECK(((struct series_opts *)opts)->label_mask == 0);
	CHECK(collector_set(c, opts, "labels", "family,kind,cause,state", err, sizeof(err)) == 0);
	CHECK(((struct series_opts *)opts)->label_mask == RT_LABEL_CAUSE);
	CHECK(collector_set(c, opts, "labels", "state kind\tfamily, netns,", err, sizeof(err)) ==
	      0);
	CHECK(((struct series_opts *)opts)->label_mask == RT_LABEL_NETNS);
	err[0] = '\0';
	CHECK(collector_set(c, opts, "labels", "family,kind,state,interface", err, sizeof(err)) ==
	      -EINVAL);
	CHECK_STR(err, "unknown label 'interface' (known: family, kind, state, cause, netns)");
	CHECK(collector_set(c, opts, "labels", "family,state,netns", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "labels must include family, kind and state");
	CHECK(collector_set(c, opts, "labels", "", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "labels must include family, kind and state");
	CHECK(collector_set(c, opts, "max_series", "1", err, sizeof(err)) == 0);
	CHECK(collector_set(c, opts, "max_series", "0", err, sizeof(err)) == -EINVAL);
	CHECK(collector_set(c, opts, "max_series", "1048577", err, sizeof(err)) == -EINVAL);
	CHECK(collector_set(c, opts, "direct_read", "auto", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "unknown key 'direct_read' in [collector.retrans]");
	collector_defaults(c, &o);
}

int main(void)
{
	vmlinux = btf__load_vmlinux_btf();
	if (vmlinux) {
		RUN(test_live_names_match_uapi);
		RUN(test_live_bound_and_prefix);
		RUN(test_live_load_and_unknown);
		RUN(test_live_rst_reasons);
	} else {
		printf("SKIPPED: the running kernel's cases: kernel BTF unreadable: %s\n",
		       strerror(errno));
	}
	RUN(test_other_numbering_and_lookalikes);
	RUN(test_no_state_enum);
	RUN(test_short_buffer);
	RUN(test_retrans_config_keys);
	RUN(test_rst_reasons_other_numbering);
	RUN(test_resets_config_keys);
	btf__free(vmlinux);
	/* 77: skipped (tests/run.sh), unless something failed. */
	return check_failed_total ? 1 : vmlinux ? 0 : 77;
}
