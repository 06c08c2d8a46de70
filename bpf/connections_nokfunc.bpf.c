// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf/connections.bpf.c without the bpf_rdonly_cast kfunc (Linux 6.2+): the same programs and
 * maps, so that user space opens it through the same skeleton on older kernels.
 */
#define CONNECTIONS_NO_KFUNC
#include "connections.bpf.c"
