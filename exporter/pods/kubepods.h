/* SPDX-License-Identifier: GPL-2.0-only */
/* What a kubepods cgroup path says: the pod UID and container ID of its task (kubepods.c). */
#ifndef NETSTACK_KUBEPODS_H
#define NETSTACK_KUBEPODS_H

#define POD_UID_LEN 36
#define CONTAINER_ID_MAX 64

/* What a kubepods cgroup path says about its task. */
struct kube_ids {
	char pod_uid[POD_UID_LEN + 1];		 /* dashed form, lower case */
	char container_id[CONTAINER_ID_MAX + 1]; /* "" for pod-level cgroups and conmon */
};

/*
 * Pod UID and container ID from one cgroup path (cgroupfs or systemd driver; containerd,
 * CRI-O, docker naming) (kubepods.c). 0 when the path is inside a kubepods pod cgroup, else
 * -ENOENT.
 */
int kubepods_parse(const char *path, struct kube_ids *out);

#endif
