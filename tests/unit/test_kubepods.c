// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for exporter/pods/kubepods.c: cgroup paths of every driver and runtime we name. */
#include <errno.h>

#include "check.h"
#include "pods/kubepods.h"

#define UID "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define UID_ "0a1b2c3d_4e5f_6789_abcd_ef0123456789"
#define CID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"

static void expect(const char *path, int ret, const char *uid, const char *cid)
{
	struct kube_ids ids;
	int r = kubepods_parse(path, &ids);

	if (r != ret)
		fprintf(stderr, "  path %s: returned %d\n", path, r);
	CHECK(r == ret);
	CHECK_STR(ids.pod_uid, uid);
	CHECK_STR(ids.container_id, cid);
}

static void cgroupfs_driver(void)
{
	expect("/kubepods/burstable/pod" UID "/" CID, 0, UID, CID);
	expect("/kubepods/besteffort/pod" UID "/" CID, 0, UID, CID);
	expect("/kubepods/pod" UID "/" CID, 0, UID, CID); /* Guaranteed: no QoS level */
	expect("/kubepods/burstable/pod" UID "/crio-" CID, 0, UID, CID);
	expect("/kubepods/burstable/pod" UID "/docker-" CID, 0, UID, CID);
	expect("/kubepods/burstable/pod" UID, 0, UID, ""); /* the pod's own cgroup */
	expect("/kubepods/burstable/pod" UID "/", 0, UID, "");
	/* Nested under another hierarchy (kind, docker-in-docker). */
	expect("/kubelet/kubepods/burstable/pod" UID "/" CID, 0, UID, CID);
	expect("/docker/abcdef/kubepods/pod" UID "/" CID "/sub", 0, UID, CID);
	/* Upper case hex in a UID is folded. */
	expect("/kubepods/pod0A1B2C3D-4E5F-6789-ABCD-EF0123456789/" CID, 0, UID, CID);
}

static void systemd_driver(void)
{
	const char *slice =
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice";
	char path[512];

	snprintf(path, sizeof(path), "%s/cri-containerd-%s.scope", slice, CID);
	expect(path, 0, UID, CID);
	snprintf(path, sizeof(path), "%s/crio-%s.scope", slice, CID);
	expect(path, 0, UID, CID);
	snprintf(path, sizeof(path), "%s/docker-%s.scope", slice, CID);
	expect(path, 0, UID, CID);
	/* CRI-O's monitor process sits in the pod but is no container. */
	snprintf(path, sizeof(path), "%s/crio-conmon-%s.scope", slice, CID);
	expect(path, 0, UID, "");
	expect(slice, 0, UID, "");
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope", 0, UID,
	       CID);
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice/cri-containerd-" CID ".scope",
	       0, UID, CID);
	/* containerd's "slice:prefix:name" cgroup path (systemd_cgroup = true, v1 style). */
	expect("/system.slice/containerd.service/kubepods-burstable-pod" UID_
	       ".slice:cri-containerd:" CID,
	       0, UID, CID);
	/* Short docker IDs are IDs too. */
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/docker-0123456789ab.scope", 0, UID,
	       "0123456789ab");
}

static void not_pods(void)
{
	expect("/", -ENOENT, "", "");
	expect("", -ENOENT, "", "");
	expect("/system.slice/sshd.service", -ENOENT, "", "");
	expect("/user.slice/user-1000.slice/session-2.scope", -ENOENT, "", "");
	expect("/kubepods", -ENOENT, "", "");
	expect("/kubepods.slice/kubepods-burstable.slice", -ENOENT, "", "");
	expect("/kubepods/burstable", -ENOENT, "", "");
	/* pod directories outside kubepods are someone else's. */
	expect("/pod" UID "/" CID, -ENOENT, "", "");
	/* Malformed UIDs. */
	expect("/kubepods/podnot-a-uid/" CID, -ENOENT, "", "");
	expect("/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef012345678/" CID, -ENOENT, "", "");
	expect("/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef01234567890/" CID, -ENOENT, "", "");
	expect("/kubepods/pod0a1b2c3dx4e5f-6789-abcd-ef0123456789/" CID, -ENOENT, "", "");
	expect("/kubepods/pod0a1b2c3g-4e5f-6789-abcd-ef0123456789/" CID, -ENOENT, "", "");
	/* Not a container ID: the pod is still known. */
	expect("/kubepods/pod" UID "/not-hex-at-all", 0, UID, "");
	expect("/kubepods/pod" UID "/abc", 0, UID, "");
}

int main(void)
{
	RUN(cgroupfs_driver);
	RUN(systemd_driver);
	RUN(not_pods);
	CHECK_EXIT();
}
