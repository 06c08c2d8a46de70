// SPDX-License-Identifier: GPL-2.0-only
/*
 * Benchmark hook: fill a RUNNING exporter's labelled drop map with synthetic series, so the
 * real scrape path renders them. dropsfill PID COUNT [REASON]
 * Finds the drop maps PID holds open and gives COUNT keys (struct drop_key from bpf/drops.h,
 * netns 1..COUNT, reason REASON (default 2), ipv4/udp) a slot each, as the BPF program does,
 * with a count on CPU 0. The exporter must run with the netns label on (else the keys render as
 * duplicate series) and max_series above COUNT. Prints the number of keys added.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "drops.h"

/* Whether PID holds the map with this id open (fdinfo names the id of each map fd). */
static int pid_holds_map(int pid, __u32 id)
{
	char path[320], line[128];
	struct dirent *d;
	DIR *dir;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!found && (d = readdir(dir))) {
		FILE *f;
		__u32 v;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "map_id: %u", &v) == 1 && v == id) {
				found = 1;
				break;
			}
		fclose(f);
	}
	closedir(dir);
	return found;
}

/* The fd of PID's map NAME (its info in *info), or -errno. */
static int find_map(int pid, const char *name, struct bpf_map_info *info)
{
	__u32 id = 0;

	while (!bpf_map_get_next_id(id, &id)) {
		__u32 len = sizeof(*info);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue; /* freed meanwhile */
		memset(info, 0, sizeof(*info));
		if (!bpf_obj_get_info_by_fd(fd, info, &len) && !strcmp(info->name, name) &&
		    pid_holds_map(pid, id) == 1)
			return fd;
		close(fd);
	}
	fprintf(stderr, "dropsfill: no map %s held by process %d\n", name, pid);
	return -ENOENT;
}

/* A writable view of the whole BPF_F_MMAPABLE array fd, or NULL. */
static void *map_rw(int fd, const struct bpf_map_info *info)
{
	void *p = mmap(NULL, (size_t)info->max_entries * info->value_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	struct bpf_map_info hash, keys_info, counts_info, slots_info;
	unsigned long count, added = 0;
	unsigned reason = 2;
	int pid, fd, ncpus;
	struct drop_key *keys;
	__u64 *counts;
	__u32 *next;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: dropsfill PID COUNT [REASON]\n");
		return 2;
	}
	pid = atoi(argv[1]);
	count = strtoul(argv[2], NULL, 10);
	if (argc == 4)
		reason = strtoul(argv[3], NULL, 10);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		fprintf(stderr, "dropsfill: cannot count CPUs\n");
		return 1;
	}
	fd = find_map(pid, "skb_drops", &hash);
	if (fd < 0)
		return 1;
	if (hash.key_size != sizeof(struct drop_key) ||
	    hash.value_size != sizeof(struct drop_slot)) {
		fprintf(stderr,
			"dropsfill: skb_drops has key %u / value %u bytes, bpf/drops.h says "
			"%zu / %zu: rebuild\n",
			hash.key_size, hash.value_size, sizeof(struct drop_key),
			sizeof(struct drop_slot));
		return 1;
	}
	{
		int kfd = find_map(pid, "skb_drop_keys", &keys_info);
		int cfd = find_map(pid, "skb_drop_counts", &counts_info);
		int sfd = find_map(pid, "skb_drop_slots", &slots_info);

		if (kfd < 0 || cfd < 0 || sfd < 0)
			return 1;
		keys = map_rw(kfd, &keys_info);
		counts = map_rw(cfd, &counts_info);
		next = map_rw(sfd, &slots_info);
		if (!keys || !counts || !next) {
			fprintf(stderr, "dropsfill: cannot map the slot maps: %s\n",
				strerror(errno));
			return 1;
		}
	}
	/* As bpf/drops.bpf.c's new_slot() does: take a slot, write its key (reason last), index it. */
	for (unsigned long i = 1; i <= count; i++) {
		struct drop_key k;
		struct drop_slot v;

		memset(&k, 0, sizeof(k));
		k.reason = reason;
		k.netns = i;
		k.family = FAMILY_IPV4;
		k.proto = PROTO_UDP;
		v.slot = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
		v.stride = counts_info.max_entries / ncpus;
		if (v.slot >= keys_info.max_entries) {
			fprintf(stderr, "dropsfill: map full after %lu keys\n", added);
			break;
		}
		keys[v.slot] = k;
		keys[v.slot].reason = 0;
		__atomic_store_n(&keys[v.slot].reason, reason, __ATOMIC_RELEASE);
		counts[v.slot] = i; /* CPU 0's slice */
		if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST)) {
			fprintf(stderr, "dropsfill: cannot add key %lu: %s\n", i, strerror(errno));
			break;
		}
		added++;
	}
	printf("%lu\n", added);
	return added == count ? 0 : 1;
}
