/* SPDX-License-Identifier: GPL-2.0 */
/*
 * akts.h - the one contract between the kernel side (bpf/) and the user side
 * (src/). Both include this file; nothing here is duplicated elsewhere.
 *
 * Dispatch
 *   Each scheduling callback listed in enum akts_callback has its own
 *   BPF_MAP_TYPE_PROG_ARRAY of AKTS_MAX_SLOTS entries (akts_<callback>_progs).
 *   The dispatcher computes the effective slot k (see Selector) and tail-calls
 *   slot k of that callback's array. A policy occupies the same slot in every
 *   array; it must fill all of them, or the callbacks it lacks fall through.
 *   The kernel refuses a program of one sched_ext_ops member in another
 *   member's array, so the arrays cannot be mixed up.
 *
 * Fall-through
 *   An empty slot, k >= AKTS_MAX_SLOTS, and AKTS_SLOT_NONE make the tail call
 *   return; the dispatcher then runs its built-in safe default (idle-CPU pick,
 *   FIFO) and counts a fall-through. Nothing else: a wrong k is inert.
 *
 * Selector
 *   Two words in two maps, so that no write of one can touch the other:
 *     selected  struct akts_selector, entry 0 of the akts_selector array map
 *               (BPF_F_MMAPABLE): the slot the user side picked. It switches
 *               with one 32-bit store through the mapping (or with
 *               bpf_map_update_elem, which rewrites only this map).
 *     override  entry 0 of akts_override, written by BPF only (the circuit
 *               breaker below; for tests, the akts_set_override syscall program):
 *               when bit 31 (AKTS_OVERRIDE_ACTIVE) is set, the low 31 bits
 *               are the slot that runs, whatever selected says. A forced
 *               default is AKTS_OVERRIDE_ACTIVE | AKTS_OVERRIDE_SLOT_MASK.
 *   effective slot = override active ? override slot : selected.
 *
 * Queues (the registry)
 *   Tasks a policy queues live only in registered queues, which the frame's
 *   init (sleepable, before any policy can run) creates and lists in
 *   akts_queues (AKTS_MAX_QUEUES entries of struct akts_queue; an entry with
 *   dsq_id 0 is unused; the id is written last, so an entry is live once it
 *   shows one):
 *     shared   the DSQs of enum akts_dsq (owner AKTS_SLOT_NONE), used by the
 *              built-in default and by policies that need no order of their
 *              own;
 *     private  AKTS_PRIVATE_QUEUES per slot (owner: the slot), ids
 *              AKTS_DSQ_PRIVATE(slot, q): q AKTS_PQ_FIFO0/1 take FIFO
 *              insertion only, AKTS_PQ_VTIME0/1 vtime insertion only. Only
 *              the policy in that slot inserts into them (akts_policy.bpf.h:
 *              akts_insert_own, akts_insert_own_vtime), so its order (an SRPT
 *              or LJF key, a per-class round) is never mixed with another's.
 *   Every slot's private queues exist from attach to exit, whether a policy
 *   fills the slot or not: a policy admitted into a slot at run time finds
 *   its queues there (and empty: the loader fills a slot of a running
 *   scheduler only once akts_slot_queued counts none left from the policy
 *   that was there, which the effective policy drains as another slot's), and none is ever touched before it exists (a move,
 *   peek or insert on a missing DSQ ejects the scheduler) or destroyed while
 *   it may hold a task (destroying a non-empty DSQ ejects too). The cost is
 *   AKTS_MAX_SLOTS * AKTS_PRIVATE_QUEUES DSQs that are mostly empty, and the
 *   guard's scan of them. Because a queue's insertion order is fixed by its
 *   id, a slot's next policy can never meet a leftover of the other order
 *   (mixing FIFO and vtime insertion in one DSQ ejects the scheduler).
 *   Per-CPU queues are the CPUs' local DSQs: besides registered queues a
 *   policy may insert only into those (SCX_DSQ_LOCAL, SCX_DSQ_LOCAL_ON | cpu),
 *   at the tail, to hand a task to a CPU about to take it (see the guard for
 *   what a queue kept there costs); likewise it may move a task from its own
 *   queues to the tail of a CPU's local DSQ (scx_bpf_dsq_move with
 *   scx_bpf_dsq_move_set_slice: how central hands tasks to other CPUs).
 *
 * What a policy may not do (the guard below relies on it)
 *   - insert at the head of a local DSQ (SCX_ENQ_HEAD or SCX_ENQ_PREEMPT with
 *     SCX_DSQ_LOCAL*): only the guard does, for a rescued task, with one
 *     exception: a policy may insert a waking task with SCX_ENQ_PREEMPT into
 *     the local DSQ of a CPU it found empty just before (preempt's hand-off,
 *     at most once per CPU per `preempt_gap`), so the kernel ends that CPU's
 *     sched_ext run at once. A task that reached that DSQ between the check
 *     and the insert (a rescue) then runs after that task's run: each such
 *     insert ahead of it adds S + one tick to the bounds below, S the longest
 *     slice such a task is given (preempt: `slice`);
 *   - use SCX_ENQ_IMMED (a task that cannot stay on its CPU goes back through
 *     ops.enqueue, and the kernel ejects a scheduler that re-enqueues a task
 *     too often without running it);
 *   - leave an enqueued task in no queue at all (the kernel's watchdog is the
 *     only backstop for that);
 *   - create or destroy DSQs, or insert into another slot's private queues,
 *     or FIFO-insert into a vtime queue (and the reverse: that ejects);
 *   - move a task between registered queues (scx_bpf_dsq_move_vtime, a move
 *     into anything but a local DSQ): that is the frame's hand-off;
 *   - write struct akts_task_ctx: it is the frame's and the shared vtime
 *     helpers' (see "Per-policy state"); task storage is shared, so this
 *     one cannot be enforced by the loader (it refuses a policy that
 *     declares any of the frame's own maps), nor can the queue ids a
 *     policy names (admission's static gate does not check them).
 *   Anything else (infinite slices, refilling prev's slice in dispatch,
 *   strict priorities, never calling dispatch for a queue) cannot break the
 *   bound.
 *
 * Kernel functions
 *   A policy calls kfuncs by their usual names through akts_policy.bpf.h,
 *   which includes <scx/common.bpf.h> by way of akts_kfunc_compat.bpf.h. On a
 *   kernel whose build left some uncallable (some 7.2.x), a fallback runs
 *   instead for scx_bpf_select_cpu_dfl, scx_bpf_pick_idle_cpu,
 *   scx_bpf_test_and_clear_cpu_idle and scx_bpf_dsq_insert_vtime (that
 *   header) and for scx_bpf_dsq_insert, scx_bpf_dsq_move_to_local and
 *   __COMPAT_scx_bpf_dsq_peek (compat.bpf.h's older names): the same meaning,
 *   less what the header says each gives up (an idle pick without preference
 *   for wholly idle cores or SCX_PICK_IDLE_* flags; "not idle"). Other kfuncs
 *   on admission's list (src/admission/static_check.cpp) can be uncallable
 *   there (on 7.2.6 scx_bpf_pick_any_cpu, scx_bpf_cpuperf_*, scx_bpf_cpu_node;
 *   on 7.2.11 scx_bpf_get_idle_cpumask, scx_bpf_cpu_node, a direct
 *   scx_bpf_dsq_peek): a policy that calls one does not load there, and
 *   libbpf's error names the kfunc. The library's policies call none of them.
 *   A policy may read which task another CPU runs: __COMPAT_scx_bpf_cpu_curr
 *   (scx_bpf_cpu_curr, else scx_bpf_cpu_rq()->curr, else the per-CPU
 *   runqueues' curr; preempt's victim check). What it could write there (a
 *   slice, with scx_bpf_task_set_slice) cannot break the bounds: a long
 *   slice is ended by the guard's local-DSQ check like any infinite one, a
 *   rescued run's by the tick's cap; a zeroed one ends that run, as a kick
 *   does (a rescued run cut by a kick goes on: Bounded wait).
 *
 * Hand-off
 *   Each policy (and the built-in default) inserts into its "own" queues:
 *   some of the shared DSQs, and its slot's private queues. Its dispatch
 *   first drains the others (akts_drain_leftovers), which only a previously
 *   effective policy could have filled and which nothing refills while it
 *   stays selected, and only then its own queues in its own order; and it
 *   lets prev keep its CPU only when those others are empty. So a switch
 *   leaves no task behind a queue that is never drained; the guard bounds
 *   whatever waits anyway.
 *   Other slots' private queues are found through akts_shared.busy_slots, a
 *   bit per slot whose private queues may hold tasks: set by the owner at
 *   every insert (when not already set), cleared by a drainer that found all
 *   four empty, and set again by the guard's timer for any private queue it
 *   sees non-empty. An insert racing the clear can lose its bit until the
 *   next firing (period_ns); a task only some CPUs may run waits until one
 *   of those dispatches (meanwhile the other CPUs' policies see leftovers
 *   and let no prev go on). The guard's bound covers both regardless.
 *
 * Bounded wait (the guard; akts_frame.bpf.h)
 *   A BPF timer owned by the frame, not by any policy, fires every period_ns.
 *   It walks every registered queue; a task waiting there for max_wait_ns or
 *   more (since it became runnable, or was last preempted) is moved to the
 *   head of the local DSQ of a CPU it may run on (its last CPU if allowed,
 *   else an online CPU of its mask) with a slice of rescue_slice_ns,
 *   preempting that CPU. The frame's own ops.tick ends a rescued task's slice
 *   after rescue_slice_ns whatever slice a policy gives it, so the next
 *   rescued task in that local DSQ runs (with none waiting there, the
 *   policy's dispatch may let it go on). Local DSQs cannot be walked (the
 *   kernel refuses to iterate or peek them), so a CPU whose local DSQ every
 *   firing has seen non-empty for max_wait_ns is preempted at each firing in
 *   which its current task has run at least rescue_slice_ns. A kick that
 *   lands while a higher class holds the CPU ends nothing (the kernel zeroes
 *   a sched_ext current's slice only), so the frame ends the run the kick was
 *   meant for as it resumes (ops.running), the tick as a backstop
 *   (akts_guard_state.local_kicks_finished counts those). The other way
 *   round, a rescued run that something ends before it has had
 *   rescue_slice_ns of CPU time (a kick meant for the run before it, which
 *   landed late; a switch's, the breaker's or a policy's kick; a yield) goes
 *   on: the frame answers ops.dispatch itself, without the policy, and
 *   refills its slice with what is left, so a rescue buys the starved task
 *   its rescue slice of progress (the bounds above are about when a task
 *   starts running; this is about what it then gets). Not when the CPU's
 *   local DSQ holds a task (the kernel runs that one without calling
 *   ops.dispatch), nor when a policy zeroes the run's slice from another
 *   callback (scx_bpf_task_set_slice): then the rescue ends early. While the
 *   breaker holds the safe slot, its 5 ms cut of every run does not shorten
 *   a rescued one below the rescue slice either.
 *
 *   With W = max_wait_ns, P = period_ns, R = rescue_slice_ns (R <= P), J the
 *   timer's lateness plus its own longest run (late_max_ns + run_ns_max), N
 *   the SCHED_EXT tasks that may run on the task's CPU and R' = R + one tick
 *   (the cap is checked at ticks: 1/HZ, 4 ms on the pinned kernel), a
 *   runnable task in a registered queue starts running within
 *       W + P + J + (N - 1) * R'           (while (N - 1) * R' < W)
 *   and one that a policy put d-deep in a local DSQ within
 *       W + (d + 2) * (P + J) + one tick        (while R + one tick + J <= P;
 *       W + (2d + 2) * (P + J) + one tick otherwise, J being the worst
 *       lateness of one firing, not of every firing),
 *   each plus S + one tick for every SCX_ENQ_PREEMPT hand-off (above) that
 *   lands ahead of the task
 *   (a local DSQ is seen at firings only: a period may pass before it is
 *   first seen, and one more before W has elapsed at a firing; a kick
 *   finished on resuming, or at worst by the tick, ends its run up to a tick
 *   late, and such delays do not add up: the next run has had R by the next
 *   firing, at least P - J later, which kicks it). Time the CPU
 *   spends in higher scheduling classes (fair tasks in partial mode,
 *   real-time tasks, interrupts) is not counted.
 *
 *   Parameters live in akts_guard_params and may change at run time; a field
 *   left 0 takes its default, and max_wait_ns AKTS_GUARD_OFF turns the guard
 *   off (tests only: the timer still scans and measures, it only never
 *   rescues). The timer, which the circuit breaker shares, publishes what it
 *   saw in akts_guard_state: the oldest task waiting per class in the
 *   registered queues right now, rescues, its own run time. The longest wait
 *   of each class since the last reset is exact (not bucketed), per CPU in
 *   akts_wait_max.
 *
 *   Limits: the timer runs in softirq context on one CPU. In --switch-all
 *   mode a softirq backlog moves to ksoftirqd, which akts itself schedules: a
 *   policy that starves ksoftirqd can delay the very timer that would rescue
 *   it, and then only the kernel's watchdog remains (the circuit breaker
 *   below runs on the same timer and cannot help there). A task whose CPU is not in its mask and that may not migrate
 *   cannot be moved (counted in rescue_failed; not seen in practice, as the
 *   kernel narrows such a task's mask to its CPU).
 *
 * Quantum timer (sub-tick preemption; akts_frame.bpf.h, akts_quantum_fire)
 *   The kernel ends a slice only at a tick (1/HZ: 4 ms on the pinned
 *   kernel), so a quantum shorter than the tick runs to the next tick. A
 *   second frame timer, off unless akts_guard_params.quantum_period_ns is
 *   set, fires every quantum_period_ns and, for each CPU whose SCHED_EXT run
 *   has had its quantum (elapsed time since the quantum began >= the slice
 *   it was given), kicks it with SCX_KICK_PREEMPT, which ends the slice
 *   now. It is the frame's, not a policy's, so every policy's slices (and
 *   the guard's rescue slices) get it; infinite slices are never kicked.
 *   A quantum begins when a run begins (ops.running) and again when a
 *   policy (or the frame, for a rescued run cut short) lets prev go on
 *   after its slice ran out (refilled in ops.dispatch). Its length is what the policy set, which the frame cannot
 *   see after the policy's tail call: it is read from the task (its slice
 *   left plus what was charged since the quantum began) by the timer, from
 *   the CPU's current task (scx_bpf_cpu_curr), and at ticks (so a cut by
 *   the guard or the breaker at a tick shortens the quantum, which then
 *   runs out). Only the quantum's own task is kicked, while it is the CPU's
 *   current task and its run was not interrupted by a higher class (the
 *   kick itself comes a moment later and may meet the next task); a kicked
 *   quantum is not kicked again until the CPU acts (or its quantum passes
 *   once more).
 *   Measured, with the timer on or off: a quantum ends when its task's slice
 *   has run out, seen in ops.dispatch (prev still runnable) or, when a task
 *   waiting in the local DSQ makes the kernel skip dispatch, in
 *   ops.stopping. One that ran its whole quantum counts in
 *   akts_cpu_stats.quantum_hist by how far past it the run went (the
 *   overrun: what the enforced quantum is, against the tick); one that ended
 *   sooner (a kick by the guard, a switch or a policy, a yield) counts in
 *   quantum_cut, even when the run then went on (a rescued run, or a prev a
 *   policy refilled). A quantum whose length was never read (it ran
 *   out before any firing or tick saw its slice) is not counted. Elapsed
 *   time, not CPU time: time a higher class takes from a run counts against
 *   its quantum.
 *   Limits: the timer's own lateness bounds what it can enforce (under TCG
 *   its floor is about 150 us p50: quanta below about 0.5 ms cannot be
 *   measured there); each kick costs the kicked CPU a reschedule, also for a
 *   task alone on its CPU whose policy then refills its slice (one kick per
 *   quantum).
 *
 * Circuit breaker (akts_frame.bpf.h, akts_breaker_fire)
 *   On the guard's timer, after its scan (one timer, one scan), BPF watches
 *   the protected class (akts_breaker_params.cls, LC by default) through four
 *   inputs, most direct first:
 *     oldest  the oldest task of the class waiting in a registered queue
 *             (the guard's scan) has waited oldest_ns;
 *     local   a CPU's local DSQ has stayed non-empty (at every firing) while
 *             one run had oldest_ns of CPU time, counted from the first
 *             firing that saw that run with the queue non-empty (local DSQs
 *             cannot be walked, so any class; CPU time, so time lost to
 *             higher classes does not count). Not seen: a stall that the
 *             guard's local kicks break into runs shorter than oldest_ns
 *             (each kick starts a new run); the kicks bound it, the rescues
 *             input does not count them;
 *     rescues the guard rescued `rescues` tasks of the class in the window:
 *             the oldest input came late (the timer's lateness). The guard's
 *             local-DSQ kicks do not count: they go by elapsed time for any
 *             class, and in partial mode higher classes alone can cause them;
 *     p99     the class's wait p99 in the window (summed histograms; waits
 *             that ended) is surely above p99_ns: its bucket's lower edge is,
 *             with at least min_samples waits (off by default; the buckets
 *             are powers of two, so a threshold acts at the next power of
 *             two above it; absent in AKTS_NO_COUNTERS builds).
 *   The user side keeps oldest_ns + period_ns below max_wait_ns, so a task
 *   starved in a registered queue trips the breaker no later than the firing
 *   that would rescue it (the scan measures before it rescues; the rescue
 *   input catches what slips past). The window (of the p99 and the rescue
 *   count) starts again every window_ns, whenever the effective slot or the
 *   protected class changes, and at a trip and its end: what a policy that no
 *   longer runs did cannot trip the breaker on another. When armed, not
 *   tripped, and what runs is not already the safe slot, an input past its
 *   threshold trips it: BPF writes the override word to AKTS_OVERRIDE_ACTIVE |
 *   safe_slot (the built-in default when safe_slot >= AKTS_MAX_SLOTS), counts
 *   the trip and its reason, records the replaced slot, the input's value and
 *   how long after its crossing the trip came (for the age inputs; at most a
 *   period plus the timer's lateness), and kicks every CPU. While tripped the
 *   frame's tick cuts any run's slice to AKTS_BREAKER_SLICE_NS, so infinite
 *   slices a culprit handed out end. The trip holds for cooldown_ns at least,
 *   and until every input has stayed calm (the ages below half oldest_ns,
 *   the p99 at most p99_ns, no rescue of the class in the window) for the
 *   last calm_ns: hysteresis. Then BPF puts back the word the trip replaced
 *   (a compare-and-swap: only if the word is still the trip's), and kicks
 *   every CPU: the selection rules again. While tripped, akts_set_override
 *   refuses (-EBUSY), and user space cannot write the map (BPF_F_RDONLY):
 *   only the breaker changes the word. Stores to `selected` during a trip
 *   change what will run after it, never what runs during it. Disarming
 *   does not end a trip in progress.
 *   Settings live in akts_breaker_params (a field left 0 takes its default;
 *   the daemon arms it by default, a bare plane leaves it disarmed), what it
 *   did in akts_breaker_state.
 *
 *   Limits: the inputs measure waiting, not fault. In partial mode a CPU
 *   kept busy by higher classes makes queued tasks wait too, and the oldest
 *   input may trip on a policy that is not to blame (harmless: the safe slot
 *   runs for a cool-down). An empty slot below AKTS_MAX_SLOTS also runs the
 *   built-in default, but BPF cannot tell, so a trip from it to the default
 *   changes nothing but the count.
 *
 * Classes
 *   akts_classes maps a process (tgid) to enum akts_class; threads share their
 *   process's entry. An unlisted task is best-effort.
 *
 * Hints (size estimates)
 *   akts_hints maps a thread (its kernel pid, a tid) to struct akts_hint: the
 *   CPU time the application expects the thread's current work (a request)
 *   still needs, and the thread's CPU time when it said so (as the daemon
 *   read it from /proc/TID/schedstat, which lags a running thread by up to a
 *   tick). The daemon writes it (v1.hint, akts hint TID DURATION) only for a
 *   thread akts schedules, looks again after the write and takes the entry
 *   back if the thread left meanwhile, and clears it on request; the frame
 *   deletes a thread's entry when the thread leaves sched_ext. Policies read
 *   it (akts_hint_remaining): remaining = estimate - CPU used since, or none
 *   once that reaches 0 (the estimate was wrong) or there is no entry. Only
 *   srpt uses it; a hint changes an order, never a bound (the guard and the
 *   breaker hold whatever the hints say). Hints live with the loaded
 *   scheduler: a re-attach (a kernel restart request, on_eject) starts with
 *   none.
 *
 * Parameters (live, typed; akts_policy.bpf.h)
 *   A policy declares up to AKTS_MAX_PARAMS parameters in one .rodata array,
 *   akts_param_descs (AKTS_PARAMS(...) of AKTS_PARAM(...) entries): name,
 *   type (enum akts_param_type), default, min, max, unit, description. The
 *   loader reads the array from the object (not from the kernel), refuses a
 *   policy whose descriptors are malformed (a name that is not [a-z0-9_],
 *   min > default or default > max, an unknown type, two with one name), and
 *   writes the defaults into entry `akts_slot` of akts_params before the
 *   policy's programs enter their arrays. akts_params (ARRAY, AKTS_MAX_SLOTS
 *   entries of struct akts_param_values) is written by the daemon through
 *   the map's memory mapping (BPF_F_MMAPABLE), one aligned 64-bit store per
 *   value. The kernel refuses a writable mapping of a BPF_F_RDONLY_PROG map,
 *   so programs can write it too, and admission's static gate does not stop
 *   an admitted policy from doing so: the library's policies only read it
 *   (akts_param), and since every read clamps, a policy that wrote another's
 *   values would still keep that one inside its own range. A failed
 *   replacement puts the slot's values back with its programs. The daemon checks a new value against the
 *   descriptor, writes that one word, and logs the change (v1.set, akts set
 *   POLICY.PARAM VALUE); a policy reads it at every use with
 *   akts_param(index), which clamps it to [min, max] again (a value written
 *   past the daemon, with bpftool, cannot leave the range). A reader sees
 *   the old value or the new one, never a mix. Values
 *   are not kept across a reload of the scheduler: each load starts from the
 *   defaults.
 *
 * Per-policy state
 *   A policy keeps state of its own in maps of its own (any name that is not
 *   one of the shared maps of akts_common.bpf.h): they are created with its
 *   object and go with it when it leaves its slot, so no layout is shared
 *   across policies or versions. Per-task state goes in a task-storage map
 *   of its own (a replacement starts empty and must treat a missing entry as
 *   "not seen yet"). struct akts_task_ctx is the frame's and the shared
 *   helpers': a policy reads cls, running_at, vtime (wfair's lag) and flags
 *   (AKTS_TASK_RESCUED: preempt spares a rescued run) and writes nothing in
 *   it (vtime only through the shared vtime helpers).
 *   The fair virtual time lives in akts_task_ctx.vtime, not in
 *   p->scx.dsq_vtime: the kernel overwrites the latter with the key of every
 *   vtime insert, so a policy with another key (LJF's, SRPT's) would
 *   otherwise corrupt the fair order of the policies after it.
 *   A policy has no init program or timer of its own (no library policy
 *   needs one; its maps start zeroed): preemption between ticks is the
 *   frame's quantum timer (off unless configured), which no policy can stop.
 *
 * What every policy shares (one registered scheduler)
 *   ops.flags, timeout_ms and dispatch_max_batch belong to the dispatcher and
 *   are the same under every policy: SCX_OPS_SWITCH_PARTIAL (only tasks set
 *   to SCHED_EXT; cleared by --switch-all, then every task), no ENQ_LAST, the
 *   kernel's built-in idle tracking on; timeout_ms from the plane's
 *   watchdog_timeout_ms (the kernel's 30 s when 0); the default
 *   dispatch_max_batch. A policy lives with them: it may not keep a task off
 *   every queue for long (the watchdog), gets no ops.enqueue call for the
 *   last task of an idle CPU's local queue (and when its dispatch places
 *   nothing local while prev is still runnable, the kernel lets prev run on
 *   with a default slice: a policy that wants the CPU back kicks it), and
 *   inserts at most that batch of tasks into local DSQs per dispatch.
 *
 * Lifecycle callbacks (init, exit, init_task, exit_task, enable, disable,
 * dump) and tick (the guard's rescue-slice cap, the breaker's slice cut, a
 * refilled quantum's length) stay in the dispatcher; no others are
 * implemented.
 */
#ifndef AKTS_H
#define AKTS_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define AKTS_MAX_SLOTS 8u
#define AKTS_SLOT_NONE 0xffffffffu
#define AKTS_OVERRIDE_ACTIVE 0x80000000u
#define AKTS_OVERRIDE_SLOT_MASK 0x7fffffffu
#define AKTS_OVERRIDE_OFF 0u

/* Scheduling callbacks that tail-call into a policy. */
enum akts_callback {
	AKTS_CB_SELECT_CPU = 0,
	AKTS_CB_ENQUEUE = 1,
	AKTS_CB_DISPATCH = 2,
	AKTS_CB_RUNNABLE = 3,
	AKTS_CB_RUNNING = 4,
	AKTS_CB_STOPPING = 5,
	AKTS_CB_QUIESCENT = 6,
	AKTS_NR_CALLBACKS = 7,
};

enum akts_class {
	AKTS_CLASS_BE = 0, /* best-effort: batch work, the default */
	AKTS_CLASS_LC = 1, /* latency-critical */
	AKTS_NR_CLASSES = 2,
};

/* Shared DSQs, created once by the dispatcher (ids clear of built-in ones). */
enum akts_dsq {
	AKTS_DSQ_LC_FIFO = 0x100,
	AKTS_DSQ_BE_FIFO = 0x101,
	AKTS_DSQ_LC_VTIME = 0x102,
	AKTS_DSQ_BE_VTIME = 0x103,
	AKTS_DSQ_FIRST = AKTS_DSQ_LC_FIFO,
	AKTS_NR_DSQS = 4,
};

/* Each slot's private queues (see "Queues"): two FIFO, two vtime, fixed by id. */
enum akts_private_queue {
	AKTS_PQ_FIFO0 = 0,
	AKTS_PQ_FIFO1 = 1,
	AKTS_PQ_VTIME0 = 2,
	AKTS_PQ_VTIME1 = 3,
	AKTS_PRIVATE_QUEUES = 4,
};
#define AKTS_DSQ_PRIVATE_BASE 0x200u
#define AKTS_DSQ_PRIVATE(slot, q) \
	((__u64)AKTS_DSQ_PRIVATE_BASE + ((__u64)(slot) & (AKTS_MAX_SLOTS - 1)) * AKTS_PRIVATE_QUEUES + ((q) & 3))

/* Registered queues (akts_queues): see "Queues" above. */
#define AKTS_MAX_QUEUES 64u
#define AKTS_QUEUE_VTIME 1u /* vtime-ordered; else FIFO */

struct akts_queue {
	__u64 dsq_id; /* 0: unused entry */
	__u32 flags;  /* AKTS_QUEUE_* */
	__u32 owner;  /* slot of the policy that owns it; AKTS_SLOT_NONE: shared */
};

/*
 * The guard's settings (akts_guard_params, one entry, written by the user
 * side, read by the timer at every firing). A field left 0 takes its default.
 */
struct akts_guard_params {
	__u64 max_wait_ns;     /* W; AKTS_GUARD_OFF turns the guard off (tests only) */
	__u64 rescue_slice_ns; /* R, clamped to [50 us, 1 s] by BPF; at most P */
	__u64 period_ns;       /* P, clamped to [1 ms, 1 s] by BPF */
	__u64 reset_gen;       /* bump it: the timer zeroes late_max_ns and run_ns_max */
	/* The quantum timer's period (see Quantum timer): 0 off; clamped to
	 * [AKTS_QUANTUM_MIN_PERIOD_NS, AKTS_QUANTUM_MAX_PERIOD_NS] by BPF. */
	__u64 quantum_period_ns;
};

#define AKTS_QUANTUM_MIN_PERIOD_NS 50000ull    /* 50 us */
#define AKTS_QUANTUM_MAX_PERIOD_NS 100000000ull /* 100 ms */
#define AKTS_QUANTUM_IDLE_POLL_NS 100000000ull  /* while off, the timer looks again this often */

#define AKTS_GUARD_OFF 0xffffffffffffffffull

/* Wait histogram: bucket b counts waits in [2^b, 2^(b+1)) ns; the last one
 * everything above. 2^31 ns is about 2.1 s. */
#define AKTS_WAIT_BUCKETS 32u

#define AKTS_GUARD_DEFAULT_MAX_WAIT_NS 200000000ull /* 200 ms */
#define AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS 2000000ull /* 2 ms */
#define AKTS_GUARD_DEFAULT_PERIOD_NS 20000000ull /* 20 ms */

/* What the guard's timer saw (akts_guard_state, one entry, written by BPF only). */
struct akts_guard_state {
	__u64 runs;			       /* timer firings */
	__u64 run_ns_total;		       /* time spent in the timer callback */
	__u64 run_ns_max;
	__u64 late_max_ns;		       /* worst lateness of a firing against its period */
	__u64 last_run_ns;		       /* bpf_ktime_get_ns of the last firing */
	__u64 scanned;			       /* tasks looked at in the last firing */
	__u64 rescues[AKTS_NR_CLASSES];	       /* tasks moved out of a registered queue */
	__u64 local_kicks;		       /* CPUs preempted for an overdue local DSQ head */
	__u64 local_kicks_finished;	       /* of those, runs the frame's tick ended (the kick found a higher class) */
	__u64 rescue_failed;		       /* overdue, but no CPU could take it */
	__u64 oldest_wait_ns[AKTS_NR_CLASSES]; /* oldest waiter per class at the last firing */
	__u64 tick_ns;			       /* 1/HZ of the running kernel; 0 if unknown */
	__u64 reset_gen_seen;		       /* the last reset_gen acted on */
	/*
	 * Tasks of the class seen waiting in the registered queues, summed over
	 * firings: the difference of two readings over the difference of `runs`
	 * is how many waited, on average, at a firing between them. Tasks, not
	 * time: sixteen threads waiting together count 16, however long (local
	 * DSQs cannot be walked, so tasks waiting there are not counted).
	 */
	__u64 waiting_sum[AKTS_NR_CLASSES];
};

/*
 * The circuit breaker's settings (akts_breaker_params, one entry, written by
 * the user side, read by the guard's timer at every firing; see "Circuit
 * breaker" above). oldest_ns, window_ns, min_samples, cooldown_ns and calm_ns
 * left 0 take their defaults; armed, rescues and p99_ns 0 are off; cls and
 * safe_slot 0 are what they say (BE, slot 0).
 */
struct akts_breaker_params {
	__u32 armed;	   /* 0: never trips (a trip already in progress still ends) */
	__u32 safe_slot;   /* the slot a trip forces; >= AKTS_MAX_SLOTS: the built-in default */
	__u32 cls;	   /* the protected class (enum akts_class) */
	__u32 rescues;	   /* trip at this many guard rescues of the class in a window; 0: off */
	__u64 oldest_ns;   /* trip when a protected task has waited this long; 0: default */
	__u64 p99_ns;	   /* trip when the class's wait p99 in the window is surely above; 0: off */
	__u64 window_ns;   /* the window of the p99 and of the rescue count; 0: default */
	__u64 min_samples; /* waits a window needs before its p99 counts; 0: default */
	__u64 cooldown_ns; /* a trip holds the safe slot at least this long; 0: default */
	__u64 calm_ns;	   /* then until every input stayed below half its threshold this long; 0: default */
};

#define AKTS_BREAKER_DEFAULT_OLDEST_NS 150000000ull /* 150 ms: below the guard's 200 ms */
#define AKTS_BREAKER_DEFAULT_WINDOW_NS 1000000000ull /* 1 s */
#define AKTS_BREAKER_DEFAULT_MIN_SAMPLES 20ull
#define AKTS_BREAKER_DEFAULT_COOLDOWN_NS 5000000000ull /* 5 s */
#define AKTS_BREAKER_DEFAULT_CALM_NS 1000000000ull /* 1 s */
/* While tripped, the frame's tick ends any run's slice within this (a policy's infinite slices). */
#define AKTS_BREAKER_SLICE_NS 5000000ull /* 5 ms */

/* Why the breaker tripped (index of akts_breaker_state.trips_by_reason). */
enum akts_trip_reason {
	AKTS_TRIP_OLDEST = 0,  /* a protected task waited oldest_ns in a registered queue */
	AKTS_TRIP_P99 = 1,     /* the class's wait p99 in the window passed p99_ns */
	AKTS_TRIP_RESCUES = 2, /* the guard had to rescue `rescues` protected tasks in the window */
	AKTS_TRIP_LOCAL = 3,   /* a local DSQ held tasks oldest_ns behind one run that never ended */
	AKTS_NR_TRIP_REASONS = 4,
};

/* What the breaker did (akts_breaker_state, one entry, written by BPF only). */
struct akts_breaker_state {
	__u64 trips;
	__u64 trips_by_reason[AKTS_NR_TRIP_REASONS];
	__u64 tripped_at_ns;   /* bpf_ktime_get_ns of the current trip; 0: not tripped */
	__u64 last_trip_ns;    /* when the last trip began */
	__u64 last_release_ns; /* when the last trip ended */
	__u32 last_reason;     /* enum akts_trip_reason of the last trip */
	__u32 last_slot;       /* the effective slot the last trip replaced (the culprit) */
	__u32 word;	       /* the override word the current trip wrote */
	__u32 prev_word;       /* the word it replaced, put back when the trip ends */
	__u32 win_slot;	       /* the effective slot the current window belongs to */
	__u32 win_cls;	       /* and the protected class it counts */
	__u64 last_value;      /* the input that tripped: a wait in ns, or a rescue count */
	__u64 last_latency_ns; /* how long after the input crossed its threshold the trip came; 0: unknown */
	__u64 calm_since_ns;   /* while tripped: since when every input is calm; 0: not calm */
	__u64 win_start_ns;    /* the current window */
	__u64 win_rescues0;    /* the guard's rescues of the class when it began */
	__u64 win_p99_ns;      /* upper edge of the p99 bucket of the window so far; 0: too few waits */
	__u64 win_samples;     /* waits of the class that ended in the window so far */
	__u64 win_hist0[AKTS_WAIT_BUCKETS]; /* the class's wait histogram when it began */
};

/* Longest wait per class since the last reset (akts_wait_max, per CPU). */
struct akts_wait_max {
	__u64 max_ns[AKTS_NR_CLASSES];
	__u32 pid[AKTS_NR_CLASSES]; /* the task that waited that long */
};

struct akts_selector {
	__u32 selected;
	__u32 reserved; /* 0 */
};


/* Per-CPU counters (akts_stats, a one-entry per-CPU array). */
struct akts_cpu_stats {
	__u64 entries[AKTS_NR_CALLBACKS];		   /* dispatcher invocations (but dispatches the frame answers: a rescued run goes on) */
	__u64 calls[AKTS_NR_CALLBACKS][AKTS_MAX_SLOTS];	   /* reached the policy in slot */
	__u64 fallthrough[AKTS_NR_CALLBACKS];		   /* ran the built-in default */
	__u64 wait_hist[AKTS_NR_CLASSES][AKTS_WAIT_BUCKETS]; /* enqueue-to-running, ns */
	/* CPU time per class, ns, added at every tick of a run and when it ends
	 * (ops.tick, ops.stopping): at most a tick behind (on a CPU whose tick
	 * is stopped, nohz_full, a run shows when it ends). */
	__u64 run_ns[AKTS_NR_CLASSES];
	/* Time per class spent runnable but not running, ns (the waits of
	 * wait_hist, summed), added when each wait ends: with run_ns, the CPU
	 * time a class wanted, which a policy that makes it wait cannot hide. */
	__u64 wait_ns[AKTS_NR_CLASSES];
	/* Switch-to-effect: the effective slot this CPU's last callback saw and
	 * when that changed (bpf_ktime_get_ns, i.e. CLOCK_MONOTONIC). Not summed. */
	__u32 last_slot;
	__u32 pad;
	__u64 slot_seen_ns;
	/* Quanta (see Quantum timer): slices that ran out on this CPU, by how
	 * far the run went past its slice (bucket as wait_hist; 0 in bucket
	 * 0), their sum and the largest; and the quantum timer's kicks (counted
	 * on the CPU the timer ran on). */
	__u64 quantum_ends;
	__u64 quantum_hist[AKTS_WAIT_BUCKETS];
	__u64 quantum_overrun_ns;
	__u64 quantum_overrun_max_ns;
	__u64 quantum_kicks;
	__u64 quantum_cut; /* slices that ended before their quantum had passed (a kick, a yield) */
};

/* Argument of the akts_set_override syscall program (BPF_PROG_TEST_RUN ctx_in). */
struct akts_override_args {
	__u32 word; /* AKTS_OVERRIDE_ACTIVE | slot, or AKTS_OVERRIDE_OFF */
	__u32 kick; /* non-zero: preempt every CPU so it applies at once */
};

/* Argument of the akts_slot_queued syscall program (BPF_PROG_TEST_RUN ctx_in). */
struct akts_slot_args {
	__u32 slot;
	__u32 reserved; /* 0 */
};

/* Argument of the akts_switch syscall program (BPF_PROG_TEST_RUN ctx_in). */
struct akts_switch_args {
	__u32 slot;
	__u32 kick; /* non-zero: preempt every CPU so the new policy applies at once */
};

/* Per-task state (task storage), understood by every policy. */
struct akts_task_ctx {
	__u64 ready_at;	    /* when the task became runnable; 0 once it ran */
	__u64 running_at;   /* when it last started running */
	__u64 rescue_exec0; /* AKTS_TASK_RESCUED: its sum_exec_runtime when the rescued run began; 0 before */
	__u32 cls;	    /* enum akts_class, refreshed when runnable, at every enqueue and before prev's dispatch */
	__u32 flags;	    /* AKTS_TASK_*, the frame's own */
	__u64 vtime;	    /* fair virtual time (the shared vtime helpers; see "Per-policy state") */
	__u64 vtime_charged_at; /* when vtime was last charged for the current run (the vtime helpers) */
};

/*
 * The guard moved the task to a CPU; its rescued run there is capped at
 * rescue_slice_ns of CPU time. The cap ends the rescued run, and so does its
 * going to sleep, a task waiting in its CPU's local DSQ when its slice is
 * zeroed (a PREEMPT, a kick, a yield), or a policy's zeroing its slice from a
 * callback; a slice zeroed with the local DSQ empty is refilled with what is
 * left of the rescue (Bounded wait). A preemption by a higher scheduling
 * class or a property change (nice, affinity, cgroup), after which the
 * kernel puts it back with its slice, does not end it either, so the cap
 * still holds when it resumes.
 */
#define AKTS_TASK_RESCUED 1u

/* Entry of akts_hints (see Hints). */
struct akts_hint {
	__u64 remaining_ns; /* the estimate when given: 1 us .. 1 h */
	__u64 exec_at_ns;   /* the thread's sum_exec_runtime then */
};

#define AKTS_MAX_HINTS 65536u
#define AKTS_HINT_MIN_NS 1000ull
#define AKTS_HINT_MAX_NS 3600000000000ull

/* Live parameters (see Parameters). */
#define AKTS_MAX_PARAMS 8u
#define AKTS_PARAM_NAME_LEN 24u
#define AKTS_PARAM_UNIT_LEN 8u
#define AKTS_PARAM_DESC_LEN 96u

enum akts_param_type {
	AKTS_PARAM_NONE = 0,	 /* an unused entry of akts_param_descs */
	AKTS_PARAM_U64 = 1,	 /* a whole number */
	AKTS_PARAM_BOOL = 2,	 /* 0 or 1 */
	AKTS_PARAM_DURATION = 3, /* nanoseconds; written as "5ms", "250us", "1s" too */
	AKTS_PARAM_PERCENT = 4,	 /* 0..100 */
};

struct akts_param_desc {
	__u32 type; /* enum akts_param_type */
	__u32 pad;
	__u64 def, min, max;
	char name[AKTS_PARAM_NAME_LEN];
	char unit[AKTS_PARAM_UNIT_LEN];
	char desc[AKTS_PARAM_DESC_LEN];
};

/* Entry k of akts_params: the values of the policy in slot k. */
struct akts_param_values {
	__u64 v[AKTS_MAX_PARAMS];
};

/* State every policy shares (akts_shared, a one-entry array). */
struct akts_shared {
	__u64 vtime_now;   /* global virtual clock of the fair vtime order */
	__u32 busy_slots;  /* bit k: slot k's private queues may hold tasks (see "Hand-off") */
	__u32 reserved;
};

#ifdef __bpf__
/* The effective slot from the two selector words (see Selector); AKTS_SLOT_NONE without them. */
static __always_inline __u32 akts_slot_from(const struct akts_selector *sel, const __u32 *ovr_word)
{
	__u32 ovr;

	if (!sel || !ovr_word)
		return AKTS_SLOT_NONE;
	ovr = *(const volatile __u32 *)ovr_word;
	if (ovr & AKTS_OVERRIDE_ACTIVE)
		return ovr & AKTS_OVERRIDE_SLOT_MASK;
	return *(const volatile __u32 *)&sel->selected;
}
#endif

/* One set of layout checks for both sides (C for BPF, C++ for the user side). */
#ifdef __cplusplus
#define AKTS_STATIC_ASSERT static_assert
#else
#define AKTS_STATIC_ASSERT _Static_assert
#endif
AKTS_STATIC_ASSERT(sizeof(struct akts_selector) == 8, "selector layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_hint) == 16, "hint layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_cpu_stats) == 8 * (7 + 56 + 7 + 64 + 2 + 2 + 2 + 5 + AKTS_WAIT_BUCKETS), "stats layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_switch_args) == 8, "switch args layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_task_ctx) == 48, "task ctx layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_param_desc) == 32 + 24 + 8 + 96, "param desc layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_param_values) == 8 * 8, "param values layout");
AKTS_STATIC_ASSERT(AKTS_NR_DSQS + AKTS_MAX_SLOTS * AKTS_PRIVATE_QUEUES <= AKTS_MAX_QUEUES, "registry size");
AKTS_STATIC_ASSERT(AKTS_DSQ_PRIVATE_BASE >= AKTS_DSQ_FIRST + AKTS_NR_DSQS, "private ids clear of shared ones");
AKTS_STATIC_ASSERT(sizeof(struct akts_guard_state) == 8 * 17, "guard state layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_wait_max) == 24, "wait max layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_guard_params) == 8 * 5, "guard params layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_breaker_params) == 16 + 8 * 6, "breaker params layout");
AKTS_STATIC_ASSERT(sizeof(struct akts_breaker_state) == 8 * (1 + 4 + 3 + 1 + 1 + 1 + 2 + 5 + 32), "breaker state layout");

#endif /* AKTS_H */
