/* SPDX-License-Identifier: GPL-2.0 */
/* The throughput policy as a scheduler of its own (see ../standalone.bpf.h). */
#include "../policies/throughput.bpf.c"
#include "../standalone.bpf.h"

AKTS_STANDALONE(throughput);
