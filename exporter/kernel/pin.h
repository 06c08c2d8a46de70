/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_PIN_H
#define NETSTACK_PIN_H

#include <bpf/libbpf.h>
#include <sys/types.h>

/* root: [bpf] pin_path, the caller's; empty: no pinning, every call below does nothing. */

/*
 * One exporter per pin path: an exclusive flock on the root directory, for as long as the
 * returned descriptor is open (the kernel lets go of it when the process ends, kill -9
 * included). Another exporter's lock is waited for up to wait_seconds. The descriptor, -EBUSY
 * when another exporter still holds it, or another -errno (both logged).
 */
int pin_lock(const char *root, unsigned wait_seconds);

/*
 * A collector calls these with its skeleton: pin_prepare after open and setting max_entries,
 * before load (reuses compatible pinned maps, replaces incompatible ones with a log line);
 * pin_commit after attach (pins the links and settings). 0 or -errno (logged).
 */
int pin_prepare(const char *root, const struct bpf_object_skeleton *s, const char *collector);
int pin_commit(const char *root, const struct bpf_object_skeleton *s, const char *collector);

/*
 * Which counting maps obj counts into: the kernel's id of the first. It changes exactly when
 * the counts start again from 0 (new maps), not when a start reuses pinned ones; 0 when obj
 * has none loaded.
 */
uint64_t counters_generation(const struct bpf_object *obj);
/*
 * Remove a collector's pins (its programs detach once no exporter holds them) and its
 * directory when that is empty then; other tools' pins stay.
 */
void pin_remove(const char *root, const char *collector);
/*
 * Before privileges are dropped for [security] user: hand pin_path, the named collectors'
 * (NULL-terminated) directories and their pins to uid:gid, so that the collectors a reload
 * starts can pin there (root made them, mode 0700 and 0600). 0 or -errno (logged).
 */
int pin_give(const char *root, const char *const *collectors, uid_t uid, gid_t gid);
/*
 * --unpin: the pins of the collectors named (NULL-terminated), then the pin_path directory
 * when nothing else is left in it; 0 or -errno (logged).
 */
int pin_remove_all(const char *root, const char *const *collectors);

#endif
