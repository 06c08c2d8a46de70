/* SPDX-License-Identifier: GPL-2.0-only */
/* What any BPF object of ours needs beside libbpf (bpfobj.c): the collectors' and the pod walk's. */
#ifndef NETSTACK_BPFOBJ_H
#define NETSTACK_BPFOBJ_H

#include <bpf/libbpf.h>
#include <stddef.h>

/*
 * Give back the pages of a loaded skeleton's BPF object embedded in the binary (up to 250 kB
 * each): libbpf reads them once to load, again only at the next load. They are clean file
 * pages, so a later read simply faults them in again.
 */
void skeleton_release(const struct bpf_object_skeleton *s);
/*
 * Load only the programs in keep (n entries, NULL ones skipped): of a collector's variants, the
 * one per hook that this kernel and these labels need.
 */
void autoload_only(struct bpf_object *obj, struct bpf_program *const *keep, size_t n);

#endif
