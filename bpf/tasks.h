/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/tasks.bpf.c and exporter/pods/taskwalk.c. */
#ifndef NETSTACK_TASKS_H
#define NETSTACK_TASKS_H

#define TASKS_COMM_LEN 16
#define TASKS_NAME_LEN 256  /* a kernfs name: NAME_MAX and its NUL */
#define TASKS_PATH_LEN 1024 /* a component starts at most TASKS_NAME_LEN before the end */
#define TASKS_DEPTH 10	    /* components of a cgroup path kept, the deepest ones */
#define TASKS_MAX 8192	    /* (netns, cgroup) pairs one walk records */
/* Kernels without bpf_loop: processes per tail-called run, and at most in a walk (33 runs). */
#define TASKS_CHUNK 4096
#define TASKS_CHUNKED_MAX (TASKS_CHUNK * 33)

/* One (network namespace, cgroup v2) pair some process is in. */
struct tasks_key {
	__u64 cgroup; /* its kernfs id: the cgroup2 directory's inode number */
	__u32 netns;
	__u32 pad;
};

#define TASKS_F_TRUNCATED (1u << 0) /* the path lost components (too deep or too long) */

struct tasks_val {
	__u32 tgid; /* the lowest (global) process ID in the pair */
	__u32 flags;
	char comm[TASKS_COMM_LEN]; /* of that process */
	/* From the cgroup2 root, "/a/b"; empty for pairs in the host's namespace. */
	char path[TASKS_PATH_LEN];
};

/* What one read of the iterator returns: a single record, after the walk filled the map. */
struct tasks_summary {
	__u32 host_netns; /* the initial network namespace's inode number */
	__u32 processes;  /* walked */
	__u32 dropped;	  /* pairs the map had no room for */
	__u32 complete;	  /* 1: the walk went round the whole task list */
};

#endif
