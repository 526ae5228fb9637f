/* SPDX-License-Identifier: GPL-2.0 */
/* The latency policy as a scheduler of its own (see ../standalone.bpf.h). */
#define AKTS_PARAMS_FIXED /* no daemon writes akts_params here: the defaults */
#include "../policies/latency.bpf.c"
#include "../standalone.bpf.h"

AKTS_STANDALONE(latency);
