// The bpftool skeletons of the dispatcher and the policies, made includable
// from C++: their structs use the kernel's short typedefs.
#pragma once

#include <linux/types.h>

using u8 = __u8;
using u16 = __u16;
using u32 = __u32;
using u64 = __u64;
using s32 = __s32;
using s64 = __s64;

#include "akts.h"

extern "C" {
#include <scx/user_exit_info_common.h>
}

#include "akts_dispatcher.skel.h"
#include "akts_latency.skel.h"
#include "akts_preempt.skel.h"
#include "akts_throughput.skel.h"
#include "akts_fifo.skel.h"
#include "akts_rr.skel.h"
#include "akts_wrr.skel.h"
#include "akts_ljf.skel.h"
#include "akts_wfair.skel.h"
#include "akts_share.skel.h"
#include "akts_srpt.skel.h"
#include "akts_central.skel.h"
#include "akts_sa_latency.skel.h"
#include "akts_sa_latency_nocount.skel.h"
#include "akts_sa_throughput.skel.h"
#include "akts_unverifiable.skel.h"
#include "akts_greedy.skel.h"
#include "akts_hoarder.skel.h"
#include "akts_lc_starver.skel.h"
#include "akts_stray.skel.h"
#include "akts_misfit.skel.h"
#include "akts_tailcall.skel.h"
