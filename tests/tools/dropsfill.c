// SPDX-License-Identifier: GPL-2.0-only
/*
 * Benchmark hook: fill a RUNNING exporter's labelled drop map with synthetic series, so the
 * real scrape path renders them. dropsfill PID COUNT [REASON]
 * Finds the "skb_drops" hash among the maps PID holds open and adds COUNT keys (struct
 * drop_key from bpf/drops.h, netns 1..COUNT, reason REASON (default 2), ipv4/udp), each with
 * a count on CPU 0. The exporter must run with the netns label on (else the keys render as
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
#include <unistd.h>

#include "drops.h"

#define MAP_NAME "skb_drops"

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

/* The fd of PID's map named MAP_NAME, or -errno. */
static int find_map(int pid)
{
	__u32 id = 0;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue; /* freed meanwhile */
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, MAP_NAME) &&
		    pid_holds_map(pid, id) == 1) {
			if (info.key_size != sizeof(struct drop_key) ||
			    info.value_size != sizeof(__u64)) {
				fprintf(stderr,
					"dropsfill: map %u has key %u / value %u bytes, "
					"bpf/drops.h says %zu / 8: rebuild\n",
					id, info.key_size, info.value_size,
					sizeof(struct drop_key));
				close(fd);
				return -EINVAL;
			}
			return fd;
		}
		close(fd);
	}
	return -ENOENT;
}

int main(int argc, char **argv)
{
	unsigned long count, added = 0;
	unsigned reason = 2;
	int pid, fd, ncpus;
	__u64 *values;

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
	fd = find_map(pid);
	if (fd < 0) {
		fprintf(stderr, "dropsfill: no map %s held by process %d: %s\n", MAP_NAME, pid,
			strerror(-fd));
		return 1;
	}
	values = calloc(ncpus, sizeof(*values));
	if (!values)
		return 1;
	for (unsigned long i = 1; i <= count; i++) {
		struct drop_key k;

		memset(&k, 0, sizeof(k));
		k.reason = reason;
		k.netns = i;
		k.family = FAMILY_IPV4;
		k.proto = PROTO_UDP;
		values[0] = i;
		if (bpf_map_update_elem(fd, &k, values, BPF_ANY)) {
			fprintf(stderr, "dropsfill: map full after %lu keys: %s\n", added,
				strerror(errno));
			break;
		}
		added++;
	}
	printf("%lu\n", added);
	free(values);
	close(fd);
	return added == count ? 0 : 1;
}
