/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_PIN_H
#define NETSTACK_PIN_H

#include <bpf/libbpf.h>

/* [bpf] pin_path; empty: no pinning, every call below does nothing. */
void pin_set_root(const char *path);

/*
 * A collector calls these with its skeleton: pin_prepare after open and setting max_entries,
 * before load (reuses compatible pinned maps, replaces incompatible ones with a log line);
 * pin_commit after attach (pins the links and settings). 0 or -1 (logged).
 */
int pin_prepare(const struct bpf_object_skeleton *s, const char *collector);
int pin_commit(const struct bpf_object_skeleton *s, const char *collector);

/*
 * Remove a collector's pins (its programs detach once no exporter holds them) and its
 * directory when that is empty then; other tools' pins stay.
 */
void pin_remove(const char *collector);
/*
 * --unpin: the pins of the collectors named (NULL-terminated), then the pin_path directory
 * when nothing else is left in it; 0 or -1 (logged).
 */
int pin_remove_all(const char *const *collectors);

#endif
