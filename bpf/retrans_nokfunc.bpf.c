// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf/retrans.bpf.c without the bpf_rdonly_cast kfunc (Linux 6.2+): the same programs, maps and
 * read-only data, so that user space opens it through the same skeleton on older kernels.
 */
#define RETRANS_NO_KFUNC
#include "retrans.bpf.c"
