/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names from the running kernel: drop reasons (BTF, tracefs fallback), TCP states (BTF) and
 * symbols (kallsyms).
 */
#ifndef NETSTACK_KERNEL_H
#define NETSTACK_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btf;

struct reason_entry {
	uint32_t value;
	char *name;
};

struct reason_table {
	struct reason_entry *e; /* sorted by value */
	unsigned n;
	char *subsys[256];  /* subsystem names by id (value >> 16), may be NULL */
	uint32_t max;	    /* SKB_DROP_REASON_MAX: core reasons are below it */
	uint32_t consumed;  /* SKB_CONSUMED, or UINT32_MAX if unknown */
	const char *source; /* "btf" or "tracefs" */
};

#define REASON_SUBSYS_SHIFT 16

/* From the running kernel: vmlinux (btf, may be NULL) and module BTF, else tracefs. */
int reasons_load(struct reason_table *t, const struct btf *btf);
/* From one BTF object (vmlinux) plus the module BTFs under btf_dir (NULL: none). */
int reasons_from_btf(struct reason_table *t, const struct btf *vmlinux, const char *btf_dir);
/* From a kfree_skb tracefs "format" file. */
int reasons_from_tracefs(struct reason_table *t, const char *format_path);
/*
 * The TCP reset reasons (enum sk_rst_reason, Linux 6.10): names less the SK_RST_REASON_ prefix,
 * t->max their SK_RST_REASON_MAX. -ENOENT where the kernel has no such enum.
 */
int rst_reasons_from_btf(struct reason_table *t, const struct btf *btf);
/*
 * What a kernel whose kfree_skb tracepoint has no reason (before 5.17) drops with: the one entry
 * DROP_REASON_UNSPECIFIED, named NOT_SPECIFIED as a plain kfree_skb() is from 5.17 on. The same
 * number as bpf/drops.h DROP_UNSPECIFIED.
 */
#define DROP_REASON_UNSPECIFIED 1
int reasons_unspecified(struct reason_table *t);
/* Name for a value: exact name, else "SUBSYS:code" for a known subsystem, else the number. */
const char *reason_name(const struct reason_table *t, uint32_t value, char *buf, size_t len);
void reasons_free(struct reason_table *t);

/* TCP states (TCP_ESTABLISHED, ...): their values index the table, names lack the TCP_ prefix. */
#define TCP_STATES_MAX 256

struct tcp_states {
	char *name[TCP_STATES_MAX]; /* NULL: no state with that value */
	unsigned n;		    /* states named */
};

/* From one BTF object: the anonymous enum that holds TCP_ESTABLISHED. -ENOENT without it. */
int tcp_states_from_btf(struct tcp_states *t, const struct btf *btf);
/* The state's name, or its number in buf when the kernel has no name for it. */
const char *tcp_state_name(const struct tcp_states *t, uint32_t value, char *buf, size_t len);
void tcp_states_free(struct tcp_states *t);

struct ksym {
	uint64_t addr;
	char *name;
};

struct ksyms {
	struct ksym *s; /* sorted by address */
	size_t n;
};

int ksyms_load(struct ksyms *k, const char *path);
/* Function containing addr, or NULL. */
/* The name of a location kallsyms cannot name (or hides: no CAP_SYSLOG); never its address. */
#define KSYM_UNKNOWN "__unknown__"

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr);
/* Its symbol (name and start address, for function+0xoff), or NULL. */
const struct ksym *ksyms_find(const struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);

/*
 * What BPF features the running kernel offers, probed once from its BTF (the collectors choose
 * their programs by them). Arguments: of the tracepoint's BTF prototype, -1 without it.
 */
struct kernel_features {
	int btf_err;		     /* 0, or why there is no BTF: every feature is then absent */
	int kfree_skb_args;	     /* 3 and more: with the drop reason (5.17) */
	int tcp_retransmit_skb_args; /* 3 and more: with the error */
	int tcp_retransmit_synack_args;
	int tcp_send_reset_args; /* 3 and more: with the reset reason (6.10) */
	int tcp_receive_reset_args;
	int inet_sock_set_state_args; /* 3: sk, oldstate, newstate (4.16) */
	bool rdonly_cast;	      /* the bpf_rdonly_cast kfunc (6.2) */
	bool sockops_rtt_cb;	      /* BPF_SOCK_OPS_RTT_CB (5.3) */
	bool iter_tcp_cb_flags;	      /* iter/tcp and TCP_BPF_SOCK_OPS_CB_FLAGS setsockopt (6.12) */
	bool memlock_charged; /* BPF maps charged to RLIMIT_MEMLOCK (struct bpf_map_memory, < 5.11) */
};

struct kernel_syms;

/*
 * What is read from the running kernel, owned by main: built once before any collector or
 * thread starts, read-only after (shared by every thread), freed at exit once every thread that
 * reads it is joined. The BTF it is read from is not kept (megabytes): what the collectors and
 * analyzers need of it is here.
 */
struct kernel {
	struct reason_table reasons;
	int reasons_err; /* 0, or why the table is empty */
	struct tcp_states states;
	int states_err;
	struct reason_table rst_reasons; /* enum sk_rst_reason */
	int rst_reasons_err;
	struct kernel_features features;
	/* kallsyms: megabytes to read, so read only by those who need it, once. */
	struct kernel_syms *syms;
};

/* Reasons, TCP states and features; what failed is kept in *_err for the collectors to report. */
void kernel_init(struct kernel *k);
/* /proc/kallsyms, read once on first use (any thread); *err 0 or why it is empty. */
const struct ksyms *kernel_ksyms(const struct kernel *k, int *err);
/* After every thread that reads k is joined. */
void kernel_free(struct kernel *k);

/*
 * Where the kernel charges BPF to RLIMIT_MEMLOCK (before 5.11): raise it to unlimited if allowed
 * (CAP_SYS_RESOURCE), else the soft limit to the hard one; logged when raised.
 */
void kernel_raise_memlock(const struct kernel *k);
/*
 * Why a BPF load failed with err (-EPERM) when it is RLIMIT_MEMLOCK: kernels before 5.11 charge
 * BPF maps to it. A phrase to append to the error ("; ...", written into buf), or "".
 */
const char *bpf_memlock_hint(const struct kernel *k, int err, char *buf, size_t len);
/* Whether the kernel has the bpf_loop helper (5.17), from a load probe: needs CAP_BPF. */
bool kernel_has_bpf_loop(void);
/*
 * The running kernel's release is at least major.minor: only for what neither BTF nor a load
 * tells (docs/kernels.md, "Features from BTF").
 */
bool kernel_at_least(unsigned major, unsigned minor);

#endif
