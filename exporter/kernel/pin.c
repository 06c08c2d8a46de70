// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pinning ([bpf] pin_path): each collector's counting maps, its links and its read-only
 * settings (.rodata) live under PIN_PATH/<collector>/ on a bpf filesystem, as map_NAME,
 * link_PROGRAM and rodata (bpffs refuses dots in names). The pinned links keep the programs
 * attached while no exporter runs, so counting goes on, and the next exporter reuses the maps
 * it finds compatible.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "kernel/pin.h"

/* Maps that hold counts: not the .rodata/.bss sections, not ring buffers. */
static bool counter_map(const struct bpf_map *map)
{
	enum bpf_map_type t = bpf_map__type(map);

	return !bpf_map__is_internal(map) && t != BPF_MAP_TYPE_RINGBUF &&
	       t != BPF_MAP_TYPE_PERF_EVENT_ARRAY;
}

/*
 * The counting maps this load creates: a collector turns a feature's maps off
 * (bpf_map__set_autocreate) when its settings leave the feature out, so which maps make a
 * complete pin follows the settings in force, as the object says, not a list of ours.
 */
static bool pinned_map(const struct bpf_map *map)
{
	return counter_map(map) && bpf_map__autocreate(map);
}

static const struct bpf_map *rodata_of(const struct bpf_object *obj)
{
	const struct bpf_map *map;
	const char *name;

	bpf_object__for_each_map(map, obj) {
		name = bpf_map__name(map);
		if (bpf_map__is_internal(map) && strstr(name, ".rodata"))
			return map;
	}
	return NULL;
}

/* PIN_PATH itself, created on a bpf filesystem; 0 or -errno (logged). */
static int root_dir(const char *root)
{
	struct statfs fs;
	bool made = !mkdir(root, 0700);

	if (!made && errno != EEXIST)
		return log_errno("pin: cannot create %s", root);
	if (statfs(root, &fs) || fs.f_type != BPF_FS_MAGIC) {
		log_error("pin: %s is not on a bpf filesystem (mount -t bpf bpf /sys/fs/bpf)",
			  root);
		if (made) /* leave nothing behind on the wrong filesystem */
			rmdir(root);
		return -ENOTDIR;
	}
	return 0;
}

/* PIN_PATH/<collector> into dir, created on a bpf filesystem; 0 or -errno (logged). */
static int collector_dir(const char *root, const char *collector, char *dir, size_t len)
{
	int err = root_dir(root);

	if (err)
		return err;
	snprintf(dir, len, "%s/%s", root, collector);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return log_errno("pin: cannot create %s", dir);
	return 0;
}

/* The process holding the flock on fd's file, from /proc/locks; 0 when not found. */
static int lock_holder(int fd)
{
	unsigned maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	int pid = 0, p;
	FILE *f;

	if (fstat(fd, &st) || !(f = fopen("/proc/locks", "re")))
		return 0;
	while (!pid && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: FLOCK %*s %*s %d %x:%x:%lu", &p, &maj, &min, &ino) == 4 &&
		    maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino)
			pid = p;
	fclose(f);
	return pid;
}

int pin_lock(const char *root, unsigned wait_seconds)
{
	int fd, pid, err = root_dir(root);

	if (err)
		return err;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return log_errno("pin: cannot open %s", root);
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	if (errno != EWOULDBLOCK) {
		err = log_errno("pin: cannot lock %s", root);
		close(fd);
		return err;
	}
	pid = lock_holder(fd);
	if (wait_seconds)
		log_warn(
			"pin: %s is in use by another exporter (pid %d); waiting up to %u s for it "
			"to stop ([bpf] pin_wait_seconds)",
			root, pid, wait_seconds);
	/* Polled every 100 ms: a blocking flock could not give up at the deadline. */
	for (unsigned i = 1; i <= wait_seconds * 10; i++) {
		nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			log_info("pin: %s is ours after %.1f s", root, i / 10.0);
			return fd;
		}
	}
	log_error("pin: %s is in use by another exporter (pid %d)%s; exiting, as both would count "
		  "every event ([bpf] pin_wait_seconds = %u)",
		  root, pid, wait_seconds ? " and still is" : "", wait_seconds);
	close(fd);
	return -EBUSY;
}

/* Why the pinned map (fd) cannot stand in for map, or NULL when it can. */
static const char *incompatible(const struct bpf_map *map, int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return "unreadable";
	if (info.type != bpf_map__type(map))
		return "another map type";
	if (info.key_size != bpf_map__key_size(map) || info.value_size != bpf_map__value_size(map))
		return "another key or value size";
	if (info.max_entries != bpf_map__max_entries(map))
		return "another max_entries";
	if (info.map_flags != bpf_map__map_flags(map))
		return "other map flags";
	return NULL;
}

/* Whether the pinned .rodata holds exactly what this object will load with. */
static bool same_settings(const struct bpf_object *obj, const char *dir)
{
	const struct bpf_map *rodata = rodata_of(obj);
	char path[512];
	size_t size = 0;
	const void *want = rodata ? bpf_map__initial_value((struct bpf_map *)rodata, &size) : NULL;
	void *have;
	int fd, key = 0;
	bool same = false;

	if (!rodata)
		return true; /* no settings to differ */
	snprintf(path, sizeof(path), "%s/rodata", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	have = calloc(1, size ? size : 1);
	same = want && have && !incompatible(rodata, fd) && !bpf_map_lookup_elem(fd, &key, have) &&
	       !memcmp(want, have, size);
	free(have);
	close(fd);
	return same;
}

/*
 * Unlink every entry of dir whose name starts with prefix, but (keep non-NULL) the maps keep
 * pins: what an earlier version pinned and this one no longer has, or what these settings do
 * not create (its counts belong to settings no longer in force), is logged as it goes.
 */
static void unlink_prefixed(const char *dir, const char *prefix, const struct bpf_object *keep)
{
	DIR *d = opendir(dir);
	const struct bpf_map *map;
	struct dirent *e;
	char path[600];

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		map = keep ? bpf_object__find_map_by_name(keep, e->d_name + strlen(prefix)) : NULL;
		if (map && pinned_map(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!unlink(path) && keep)
			log_info("pin: %s: a map %s; removed", path,
				 map ? "these settings do not use" : "this version no longer has");
	}
	if (d)
		closedir(d);
}

int pin_prepare(const char *root, const struct bpf_object_skeleton *s, const char *collector)
{
	struct bpf_map *map;
	char dir[300], path[512], why[160] = "";
	bool same, present = false, missing = false;
	int reused = 0, fd, err;

	if (!root[0])
		return 0;
	err = collector_dir(root, collector, dir, sizeof(dir));
	if (err)
		return err;
	same = same_settings(*s->obj, dir);
	/*
	 * All or none: a collector's maps hold one state (the drop slots' hash, keys and counters
	 * must agree), so one map that cannot be reused replaces them all.
	 */
	bpf_object__for_each_map(map, *s->obj) {
		const char *bad;

		if (!pinned_map(map))
			continue;
		snprintf(path, sizeof(path), "%s/map_%s", dir, bpf_map__name(map));
		fd = bpf_obj_get(path);
		if (fd < 0) {
			missing = true;
			continue;
		}
		present = true;
		bad = same ? incompatible(map, fd) : "the collector's settings changed";
		close(fd);
		if (bad && !why[0])
			snprintf(why, sizeof(why), "%s%s%s", bad, same ? " in map " : "",
				 same ? bpf_map__name(map) : "");
	}
	if (present && missing && !why[0])
		snprintf(why, sizeof(why), "a map of the collector is not pinned");
	bpf_object__for_each_map(map, *s->obj) {
		if (!pinned_map(map))
			continue;
		snprintf(path, sizeof(path), "%s/map_%s", dir, bpf_map__name(map));
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			close(fd);
			if (why[0]) {
				log_warn("pin: %s: %s; replacing it, its counts restart from 0",
					 path, why);
				unlink(path);
			} else {
				reused++;
			}
		}
		/* libbpf reuses what is pinned there at load, or creates and pins it. */
		err = bpf_map__set_pin_path(map, path);
		if (err) {
			log_error("pin: %s: cannot set the pin path", path);
			return err;
		}
	}
	unlink_prefixed(dir, "map_", *s->obj);
	if (reused)
		log_info("pin: %s: %d pinned map(s) reused, counts go on", collector, reused);
	return 0;
}

int pin_commit(const char *root, const struct bpf_object_skeleton *s, const char *collector)
{
	const struct bpf_map *rodata;
	char dir[300], path[512];
	int err;

	if (!root[0])
		return 0;
	err = collector_dir(root, collector, dir, sizeof(dir));
	if (err)
		return err;
	/*
	 * The previous exporter's links go (their programs detach), ours are pinned. Between
	 * our attach and this, an event can be counted by both programs: a few microseconds.
	 */
	unlink_prefixed(dir, "link_", NULL);
	for (int i = 0; i < s->prog_cnt; i++) {
		struct bpf_link *link = *s->progs[i].link;

		if (!link)
			continue;
		snprintf(path, sizeof(path), "%s/link_%s", dir, s->progs[i].name);
		if (bpf_link__pin(link, path))
			return log_errno("pin: cannot pin %s", path);
	}
	rodata = rodata_of(*s->obj);
	snprintf(path, sizeof(path), "%s/rodata", dir);
	unlink(path);
	if (rodata && bpf_map__pin((struct bpf_map *)rodata, path))
		return log_errno("pin: cannot pin %s", path);
	return 0;
}

uint64_t counters_generation(const struct bpf_object *obj)
{
	struct bpf_map_info info = { 0 };
	const struct bpf_map *map;
	__u32 len = sizeof(info);

	if (!obj)
		return 0;
	bpf_object__for_each_map(map, obj) {
		if (!pinned_map(map) || bpf_map__fd(map) < 0)
			continue;
		/* Map ids are never reused (until 2^31 maps later): a new map, a new id. */
		if (bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len))
			return 0;
		return info.id;
	}
	return 0;
}

/* Ours, in a collector's directory: map_NAME, link_PROGRAM and rodata (see the top). */
static bool own_pin(const char *name)
{
	return !strncmp(name, "map_", 4) || !strncmp(name, "link_", 5) || !strcmp(name, "rodata");
}

void pin_remove(const char *root, const char *collector)
{
	char dir[300], path[600];
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (!root[0])
		return;
	snprintf(dir, sizeof(dir), "%s/%s", root, collector);
	if (stat(dir, &st))
		return;
	/* Only our own names: other tools may pin beside ours, even in this directory. */
	d = opendir(dir);
	while (d && (e = readdir(d)))
		if (own_pin(e->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (unlink(path))
				log_warn("pin: cannot remove %s: %s", path, strerror(errno));
		}
	if (d)
		closedir(d);
	if (!rmdir(dir))
		log_info("pin: removed %s (its programs detach)", dir);
	else if (errno == ENOTEMPTY || errno == EEXIST)
		log_info("pin: removed the pins of %s in %s; other pins in it stay, and so does it",
			 collector, dir);
	else
		log_warn("pin: cannot remove %s: %s", dir, strerror(errno));
}

/* chown path to uid:gid; a failure is logged and left in *err (-errno), the others go on. */
static void give(const char *path, uid_t uid, gid_t gid, int *err)
{
	if (fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW))
		*err = log_errno("pin: cannot hand %s to uid %u", path, (unsigned)uid);
}

int pin_give(const char *root, const char *const *collectors, uid_t uid, gid_t gid)
{
	char dir[300], path[600];
	struct dirent *e;
	int err = 0;
	DIR *d;

	if (!root[0])
		return 0;
	give(root, uid, gid, &err);
	for (; *collectors; collectors++) {
		snprintf(dir, sizeof(dir), "%s/%s", root, *collectors);
		d = opendir(dir);
		if (!d)
			continue; /* not pinned (yet): made by the user later */
		give(dir, uid, gid, &err);
		while ((e = readdir(d)))
			if (own_pin(e->d_name)) {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				give(path, uid, gid, &err);
			}
		closedir(d);
	}
	return err;
}

int pin_remove_all(const char *root, const char *const *collectors)
{
	if (!root[0]) {
		log_error("--unpin: no [bpf] pin_path configured");
		return -EINVAL;
	}
	for (; *collectors; collectors++)
		pin_remove(root, *collectors);
	if (!rmdir(root) || errno == ENOENT) {
		log_info("--unpin: removed %s", root);
		return 0;
	}
	if (errno == ENOTEMPTY || errno == EEXIST) {
		log_info("--unpin: %s holds pins that are not the exporter's; they stay, and so "
			 "does it",
			 root);
		return 0;
	}
	return log_errno("--unpin: cannot remove %s", root);
}
