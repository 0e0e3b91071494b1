//! One worker thread of the multi-threaded scheduler (Tokio's `multi_thread::worker`), and
//! the routing of woken and spawned tasks (`submit`).
//!
//! A worker owns a LIFO slot and, in `Shared.remotes[index]`, a 256-slot `LocalQueue` and a
//! `Parker`. Its loop:
//!
//! 1. Every `global_queue_interval` ticks take from the inject queue first, so tasks woken
//!    from outside cannot starve behind a busy local queue; otherwise take the LIFO slot, then
//!    the local queue, then a batch from the inject queue.
//! 2. Nothing local: become a searcher (at most half the workers) and steal half of a random
//!    victim's queue, then try the inject queue. A worker whose recent takes did not pay is
//!    *restrained* for a while (`HelpPolicy`): it takes only from a queue that is stuck, and
//!    dozes between two looks (`stealWork`, `doze`).
//! 3. Nothing anywhere: park. The first parker to claim `driver.owner` becomes the *driver
//!    owner*: it blocks in the I/O driver's `epoll_wait`, until an I/O event, the next timer
//!    deadline, or an unpark (which writes the driver's eventfd). The others sleep on their
//!    futex. Every `event_interval` ticks a busy worker fires due timers and, if nobody owns
//!    the drivers, turns the I/O driver without blocking (Tokio's maintenance), so that I/O is
//!    not starved while every worker is busy.
//!
//! ## The driver owner
//!
//! `driver.owner` (time/Driver.zig) names the one thread allowed to turn the I/O driver, and
//! the one parked worker that sleeps with a timeout. It is claimed with a seq_cst
//! compare-and-swap and released with a seq_cst store, so successive turns are ordered (the
//! I/O driver's events buffer and its release list need no lock). No I/O event or timer is
//! left unattended and no wake-up is lost:
//!
//! - Every worker that parks tries to claim ownership, and only an awake worker releases it
//!   (after its blocking or non-blocking turn), so when every worker is parked, one of them is
//!   the owner, blocked in `epoll_wait`: a new connection or byte wakes it at once — there is
//!   no polling interval. An awake worker parks or turns the driver within `event_interval`
//!   ticks.
//! - The owner reads the next timer deadline *after* claiming ownership; a registration that
//!   moves the deadline earlier stores it and then reads `owner` (both seq_cst, time/Driver.zig)
//!   and unparks the owner, or a sleeper if there is none (which then claims ownership).
//! - Spawns and wakes unpark a sleeper through `notifyParked`; unparking the owner writes the
//!   eventfd (Parker.zig, `parked_io`), so an unpark between the owner's last check and its
//!   `epoll_wait` is not lost either. Shutdown unparks every worker the same way.
//! - Tasks woken by the events the owner dispatches go to its own LIFO slot and queue (it is a
//!   worker thread), and `notifyParked` wakes a sleeper for the ones it cannot run first.
//! - An owner that leaves the driver to run a task must not leave the drivers unattended while
//!   something is registered or armed: if no other worker is awake it wakes a sleeper, which
//!   becomes the owner (`park`, and the last-searcher check of `runTask`; Shared.zig,
//!   "Liveness").
//! - EINTR ends a blocking turn early (io/Driver.zig, `wait`); the park loop recomputes the
//!   timeout.
//!
//! ## Routing (`submit`)
//!
//! A task woken or spawned on one of this runtime's workers goes to that worker's LIFO slot
//! (the most recently woken task runs next: message-passing pairs stay hot in cache), the
//! previous occupant to the back of the local queue. At most `lifo_polls_max` LIFO polls run
//! in a row and they share one cooperative budget, after which the LIFO task goes to the back
//! of the queue — so a pair of tasks waking each other cannot monopolise the worker. A task
//! woken while it was running (including by itself, e.g. `yieldNow`) always goes to the back
//! of the queue. A task woken from any other thread goes to the inject queue, followed by
//! waking an idle worker.
//!
//! Which local pushes wake an idle worker (`scheduleLocal`): a displaced LIFO occupant and a
//! yielded task do (as in Tokio); a task that lands in the LIFO slot does not (it runs next);
//! and — unlike Tokio — neither does a task sent to the back because the LIFO chain reached
//! `lifo_polls_max` when the queue was otherwise empty: it too is simply the next task, and
//! waking a worker for it handed each fourth hop of a serial chain (lock hand-offs) to another
//! CPU, which then contended for the same lock (see `scheduleLocal`).
//!
//! **A finished fiber hands its LIFO slot to the queue** (`settleLifoOnFinish`). A task
//! lands in the LIFO slot because the running task woke it, on the bet that the waker will
//! wait for its answer next (a request and its reply, a lock hand-off). A fiber that then
//! *finishes* waits for nothing: when other tasks are queued (locally or in the inject queue),
//! its LIFO task goes to their back instead of cutting in front of them. A worker pool is the
//! case (1,000 producers of one queue, io_fan_in): each producer put its item, woke the lone
//! consumer into the slot and returned, so the consumer ran, took one or two items and waited
//! again before the next producer ran — a futex wake and two fiber switches per item or two.
//! Behind the queued producers it wakes once and finds the queue's buffer full (ampere.io
//! io_fan_in at one worker: 114 -> 81 ns/op, zio 69). Only fibers (std.Io code): a
//! state-machine task that completes costs no switch to cut in front of, and native ping_pong
//! measured slower with the rule. A join or group waiter woken by the completion itself is
//! woken after this check and still lands in the slot (a parent awaiting its child resumes
//! hot).
//!
//! **Direct hand-off.** A fiber that suspends while the LIFO slot holds a fiber task switches
//! straight to it (`takeHandoff` on its stack, `finishHandoff` on the other's; fiber/Fiber.zig,
//! "Direct hand-off"). It is a LIFO poll like any other, counted against `lifo_polls_max` and
//! the chain's budget — while another task waits. With the local and inject queues empty a
//! chain of hand-offs runs on to `handoff_polls_max` (32): the cap is fairness to queued work,
//! and there is none, while every cut sent the next hop through the worker's loop (two stack
//! switches and a loop iteration instead of one switch: a quarter of a one-pair std.Io.Queue
//! ping-pong's messages). The moment a task is queued, the next hand-off past `lifo_polls_max`
//! closes the slot as before.
//!
//! With the slot empty the fiber switches to the head of the local queue if that is a fiber
//! task (`handoffSuccessor`) — the task the loop would run next, so the order is the loop's,
//! with one stack switch instead of two (to the worker and out again) and no loop iteration: a
//! burst of 1,000 short fibers (a std.Io group, a worker pool) runs as chains of hand-offs
//! (ampere.io at one worker: io_spawn_group 113 -> 90 ns/op, io_fan_in 80 -> 68, io_fan_out
//! 79 -> 67, io_sleep d=0 163 -> 142). A head that is not a fiber's is popped all the same and
//! kept as `popped_head`, the worker's next task after the LIFO slot. Taking the head starts a
//! new LIFO chain, as the loop's `runTask` would (the slot opens again and its caps count
//! afresh: a ping-pong pair among 100 keeps its LIFO hops).
//!
//! Taking the head stands for an iteration of the loop: it ticks the loop's countdowns, and
//! an iteration with the maintenance or the inject queue's turn due is left to the loop, so
//! the I/O driver and timers are attended at the loop's cadence in polls. std.Io's waits
//! (futex, sleep) spend no cooperative budget, so what bounds a run of hand-offs is
//! `handoff_run_max` (64 per `runTask`, of either kind). `polled` names the task whose poll
//! is running, which a hand-off moves along; `pollTask` finishes that one.
//!
//! The LIFO slot, `tick`, `is_searching`, the spin policy and the metrics counters are written
//! only by the owning thread (the counters with relaxed atomic stores, so `Runtime.metrics`
//! may read them from anywhere: see `Metrics`). When the worker stops (shutdown), it moves its
//! LIFO task (and a popped head) to its local queue, so that shutdown finds every queued task
//! in `Shared`.
//!
//! ## Parking
//!
//! With nothing to do anywhere, the worker registers as asleep (`Idle`), then — per its
//! `SpinPolicy` — may spin for a notification (holding the runtime's single spinning slot,
//! unless it expects a wake-up it caused) before it sleeps on its futex. It gives the slot
//! back when the spin ends, before it blocks: the slot names a thread whose wake-up is a store.
//!
//! ## Deferred notifications
//!
//! The LIFO-cap push that wakes nobody (above) publishes a deferral instead
//! (`deferNotification`), withdrawn at the next loop iteration; the driver owner issues the
//! notification if the same poll is still running a bound later (Shared.zig, "Deferred
//! notifications").

const std = @import("std");
const assert = std.debug.assert;
const Header = @import("../task/Header.zig");
const LocalQueue = @import("LocalQueue.zig");
const Parker = @import("../Parker.zig");
const Driver = @import("../time/Driver.zig");
const budget = @import("../budget.zig");
const context = @import("../context.zig");
const Shared = @import("Shared.zig");
const hook = @import("../hook.zig");
const explore = @import("../explore.zig");
const Metrics = @import("Metrics.zig");
const SpinPolicy = @import("SpinPolicy.zig");
const HelpPolicy = @import("HelpPolicy.zig");
const clock = @import("../time/clock.zig");
const TaskBlocks = @import("TaskBlocks.zig");

const Worker = @This();

pub const lifo_polls_max: u32 = 3;
/// The cap of a chain of direct hand-offs while no other task waits (`countLifoPoll`).
pub const handoff_polls_max: u32 = 32;
/// Direct hand-offs (LIFO or queue head) in one `runTask`: the worker's loop runs at least
/// every `1 + handoff_run_max` polls.
pub const handoff_run_max: u32 = 2 * handoff_polls_max;

shared: *Shared,
index: u32,
lifo: ?*Header = null,
lifo_enabled: bool = true,
tick: u32 = 0,
is_searching: bool = false,
rng_state: u64,
spin: SpinPolicy,
/// This worker's event counts (owner writes, anyone reads; see `Metrics`).
metrics: Metrics.Counters = .{},
/// A notification was deferred (`scheduleLocal`) and is published in `Remote.deferred`; the
/// next loop iteration (the poll returned) withdraws it.
deferred_published: bool = false,
/// Holds the drivers' watch (`Shared.driver_watch`, "Liveness"); the `leaves` count at its last
/// wake-up; whether that wake-up was the watch's timeout (no spin before the next one).
watching: bool = false,
watch_seen_leaves: u64 = 0,
watch_timed_out: bool = false,
/// Consecutive watch timeouts in which no owner left.
watch_quiet: u32 = 0,
/// Freed fiber-task blocks for the next spawns on this worker (owner thread only;
/// `TaskBlocks`). Given back to the allocator by `Scheduler.deinit`.
task_blocks: TaskBlocks = .{},
/// Task ids this worker has handed out (`nextTaskId`). Owner thread only.
task_ids: u64 = 0,
/// The task whose poll is running on this thread: set by `pollTask`, moved by a direct hand-off
/// (`takeHandoff`) to the task handed to. Owner thread only.
polled: ?*Header = null,
/// A fiber task that handed this thread to another (`takeHandoff`) and whose post-poll
/// transition is owed: the task handed to makes it on landing (`finishHandoff`). Whether it
/// finished (then the transition is: release its stack, then complete it — or, if it completed
/// on its own stack (`completed_early`), only drop its references).
handoff_from: ?*Header = null,
handoff_finished: bool = false,
/// A finished fiber task completed on its own stack (`takeHandoff`), its references (the
/// poller's and the owned list's) still held: whoever releases its stack drops them
/// (`finishPolled`). Owner thread only; set at most until the chain's next landing or the end
/// of `pollTask`.
completed_early: ?*Header = null,
/// LIFO polls in the current chain (since `runTask` began or a hand-off took the queue's head),
/// hand-offs included (at most `handoff_polls_max`).
lifo_polls: u32 = 0,
/// Direct hand-offs in the current `runTask` (at most `handoff_run_max`).
run_handoffs: u32 = 0,
/// The head of the local queue, popped by a hand-off that could not switch to it (not a fiber
/// task): the worker's next task after the LIFO slot. Owner thread only; null whenever the
/// worker looks for work elsewhere, parks or stops.
popped_head: ?*Header = null,
/// Ticks left until the next `maintenance` (every `event_interval` ticks) and until the next
/// inject-first `nextTask` (every `global_queue_interval` ticks): counted down, because
/// `tick % interval` was two integer divisions per loop iteration (2% of io_spawn's samples).
until_maintenance: u32,
until_inject_first: u32,
/// Fiber resumptions on this worker (`fiberResume`), the worker's index in the top 16 bits:
/// a fiber task stamps it when it suspends, so that its next resumption can tell whether its
/// stack may have left the cache (fiber/task.zig, `stackMayBeCold`). Owner thread only.
fiber_clock: u64,

/// The worker whose thread this is (null on every other thread).
threadlocal var current_worker: ?*Worker = null;

pub fn init(shared: *Shared, index: u32) Worker {
    assert(index < shared.remotes.len);
    return .{
        .shared = shared,
        .index = index,
        .rng_state = 0x9e3779b97f4a7c15 ^ (@as(u64, index) + 1) *% 0xbf58476d1ce4e5b9,
        .spin = SpinPolicy.init(shared.options.spin_before_park_ns),
        .until_maintenance = shared.options.event_interval,
        .until_inject_first = shared.options.global_queue_interval,
        .fiber_clock = @as(u64, index) << fiber_clock_index_shift,
    };
}

/// Where a worker's index sits in `fiber_clock`.
pub const fiber_clock_index_shift = 48;

/// Counts a fiber resumption on this worker; returns the clock after it.
pub fn fiberResume(self: *Worker) u64 {
    self.fiber_clock +%= 1;
    return self.fiber_clock;
}

/// Counts a tick off `left`; true (and `left` back at `interval`) on every `interval`-th call.
fn countdown(left: *u32, interval: u32) bool {
    assert(left.* > 0 and left.* <= interval);
    left.* -= 1;
    if (left.* != 0) return false;
    left.* = interval;
    return true;
}

/// Counts on this worker's own set (owner thread only).
fn recorder(self: *Worker) Metrics.Recorder {
    return .{ .counters = &self.metrics, .owner = true };
}

/// A task id for a spawn on the calling thread. A worker of this runtime makes it from a
/// counter of its own: `(count << 16) | (2 * index + 1)` — odd, unique per worker, and always
/// matching the worker's own owned-list shard (`OwnedTasks.workerShard`: id & mask, and the
/// mask is at least 4 x workers - 1). So a spawn writes no cache line shared with other workers
/// (the runtime-wide counter was a contended `fetchAdd` per spawn). Such a task is linked into
/// the owned list only if it goes idle, into the shard of the worker where it does (`linkOwned`).
/// Any other thread takes `Shared.nextTaskId` doubled: even, so the two kinds never collide,
/// and its spawn inserts by the id (the even shards).
pub fn nextTaskId(shared: *Shared) u64 {
    if (currentOf(shared)) |worker| {
        comptime assert(@import("Idle.zig").workers_max < 1 << 15); // 2 * index + 1 fits 16 bits.
        worker.task_ids += 1;
        assert(worker.task_ids < 1 << 48); // No wrap-around in 2^48 spawns per worker.
        return (worker.task_ids << 16) | (2 * @as(u64, worker.index) + 1);
    }
    const id = shared.nextTaskId();
    assert(id < 1 << 63);
    return id << 1;
}

/// The worker of `shared` running on the calling thread, if the caller is one.
pub fn currentOf(shared: *const Shared) ?*Worker {
    const worker = current_worker orelse return null;
    return if (worker.shared == shared) worker else null;
}

/// A task on this thread handed work to the blocking pool: the result will wake it soon.
pub fn noteBlockingHandOff(self: *Worker) void {
    assert(current_worker == self);
    self.metrics.bump(.blocking_spawns);
    self.spin.expectWakeup();
}

/// The worker running on the calling thread if it belongs to the runtime whose task scheduler
/// is `scheduler`. Compared by address only: a task freed after its runtime stopped must not
/// read that runtime (the calling thread's own runtime is alive while it runs).
pub fn currentFor(scheduler: *const Header.Scheduler) ?*Worker {
    const worker = current_worker orelse return null;
    return if (&worker.shared.task_scheduler == scheduler) worker else null;
}

/// A task block for a task of the runtime whose task scheduler is `scheduler` (`TaskBlocks`),
/// when the caller is one of its workers (that worker is the block's home): from the worker's
/// cache, else its return list, else `allocator`. Null on any other thread: the caller
/// allocates the task's exact size instead (blocks are only ever made by workers, so a
/// blocking-pool task or a spawn from a plain thread never holds 512 bytes for a smaller task).
pub fn allocTaskBlock(scheduler: *const Header.Scheduler, allocator: std.mem.Allocator) std.mem.Allocator.Error!?TaskBlocks.Taken {
    const worker = currentFor(scheduler) orelse return null;
    const home: u16 = @intCast(worker.index);
    const returned = &worker.shared.remotes[worker.index].blocks_returned;
    if (worker.task_blocks.popOrReclaim(returned, allocator)) |block| return .{ .block = block, .home = home };
    return .{ .block = TaskBlocks.allocate(allocator) orelse return error.OutOfMemory, .home = home };
}

/// Frees a task block of home `home` (a worker of the runtime whose task scheduler is
/// `scheduler`): into the calling worker's cache if it is the home and there is room, onto the
/// home's return list if the caller is another of the runtime's workers, else to `allocator`.
pub fn freeTaskBlock(scheduler: *const Header.Scheduler, allocator: std.mem.Allocator, block: TaskBlocks.Block, home: u16) void {
    assert(home != TaskBlocks.home_none);
    const worker = currentFor(scheduler) orelse return TaskBlocks.release(allocator, block);
    if (home == worker.index) {
        if (!worker.task_blocks.push(block)) TaskBlocks.release(allocator, block);
        return;
    }
    assert(home < worker.shared.remotes.len);
    worker.shared.remotes[home].blocks_returned.push(block);
}

/// The worker running on the calling thread, of any runtime.
pub fn current() ?*Worker {
    return current_worker;
}

/// This worker's steal restraint and the restrained search's looks (owner thread only; in
/// `Shared.Remote`, not here: 300 bytes more of this struct pushed its hot fields apart,
/// 10% on task_spawn).
fn help(self: *Worker) *HelpPolicy {
    return &self.shared.remotes[self.index].help;
}

/// This worker's run queue (the stealable part lives in `Shared`).
pub fn local(self: *Worker) *LocalQueue {
    assert(self.index < self.shared.remotes.len);
    return &self.shared.remotes[self.index].local;
}

pub fn parker(self: *Worker) *Parker {
    assert(self.index < self.shared.remotes.len);
    return &self.shared.remotes[self.index].parker;
}

/// The thread body: runs until the runtime shuts down.
pub fn run(self: *Worker) void {
    assert(current_worker == null);
    explore.enterThread(explore.workerLane(self.index));
    const saved = context.enter(self.shared.handles());
    defer saved.restore();
    current_worker = self;
    defer current_worker = null;
    const shared = self.shared;
    while (!shared.isShuttingDown()) {
        self.beginIteration();
        if (countdown(&self.until_maintenance, shared.options.event_interval)) self.maintenance();
        if (self.nextTask()) |task| {
            self.runTask(task);
            continue;
        }
        if (self.stealWork()) |task| {
            self.runTask(task);
            continue;
        }
        if (self.help().doze_wanted) {
            self.doze();
            continue;
        }
        self.park();
    }
    // Leave every queued task where shutdown looks for it.
    if (self.lifo) |task| {
        self.lifo = null;
        self.pushBack(task);
    }
    if (self.popped_head) |task| {
        self.popped_head = null;
        self.pushBack(task);
    }
    assert(self.lifo == null and self.popped_head == null);
}

/// What every iteration of the loop does first (a hand-off to the queue's head stands for one):
/// tick, and withdraw a published deferral — the poll that made it has returned.
fn beginIteration(self: *Worker) void {
    self.tick +%= 1;
    if (self.deferred_published) self.withdrawDeferred();
}

/// Where woken and spawned tasks of a runtime go (the `Header.Scheduler.submit` of its tasks;
/// `ctx` is its `Shared`).
pub fn submit(ctx: *anyopaque, task: *Header, yielded: bool) void {
    const shared: *Shared = @ptrCast(@alignCast(ctx));
    if (currentOf(shared)) |worker| {
        worker.scheduleLocal(task, yielded);
        return;
    }
    shared.submitRemote(task);
}

/// Pushes to the back of the local queue (or overflows into the inject queue), counted.
fn pushBack(self: *Worker, task: *Header) void {
    const overflowed = self.local().pushBackOrOverflow(task, &self.shared.inject);
    if (overflowed == 0) return;
    self.metrics.bump(.overflows);
    self.metrics.bumpBy(.inject_pushes, overflowed);
}

fn nextTask(self: *Worker) ?*Header {
    // A searcher has no local work to be fair against, and its takes from the inject queue
    // follow `stealWork`'s rules when it is restrained.
    if (!self.is_searching and countdown(&self.until_inject_first, self.shared.options.global_queue_interval)) {
        if (self.shared.inject.pop()) |task| {
            self.metrics.bump(.inject_pops);
            return task;
        }
    }
    if (self.nextLocalTask()) |task| return task;
    // Out of local work: the help that brought the last work here is over (`HelpPolicy`).
    if (self.help().helping()) {
        if (self.help().endHelp(clock.nowNs(), self.metrics.get(.polls)) == .restrained) self.metrics.bump(.restraints);
    }
    // A restrained worker leaves the inject queue to the workers that run (`stealWork`'s rules),
    // if any does.
    if (self.help().restrainedNow() and self.shared.idle.othersWorking(!self.is_searching)) return null;
    return self.takeFromInject();
}

fn nextLocalTask(self: *Worker) ?*Header {
    if (self.lifo) |task| {
        self.lifo = null;
        self.metrics.bump(.lifo_hits);
        return task;
    }
    if (self.popped_head) |task| {
        self.popped_head = null;
        return task;
    }
    return self.local().pop();
}

/// Moves a fair share of the inject queue into the local queue; returns one task to run.
fn takeFromInject(self: *Worker) ?*Header {
    const shared = self.shared;
    assert(self.lifo == null); // Called only when the LIFO slot and local queue are empty.
    if (shared.inject.isEmpty()) return null;
    const room: usize = @min(self.local().remainingSlots(), LocalQueue.capacity / 2);
    const share = shared.inject.len() / shared.remotes.len + 1;
    const batch_max = @max(1, @min(share, room));
    const first = shared.inject.popBatch(batch_max) orelse return null;
    var next = first.queue_next;
    first.queue_next = null;
    var moved: usize = 0;
    while (next) |task| : (moved += 1) {
        next = task.queue_next;
        task.queue_next = null;
        // Fits: at most `room` - 1 tasks are moved, into the first half of the queue.
        const overflowed = self.local().pushBackOrOverflow(task, &shared.inject);
        assert(overflowed == 0);
    }
    assert(moved < batch_max);
    self.metrics.bumpBy(.inject_pops, moved + 1);
    self.noteTaken(moved + 1);
    return first;
}

fn runTask(self: *Worker, task: *Header) void {
    const shared = self.shared;
    assert(current_worker == self);
    assert(self.lifo_enabled);
    self.spin.confirm();
    if (self.is_searching) {
        self.is_searching = false;
        self.endSearch();
        // The last searcher to find work wakes another worker only if a queue still holds
        // work (its own, after a stolen batch, included) or the drivers would be left
        // unattended (`Shared.notifyIfNeeded`). Tokio wakes one unconditionally; with one
        // task in flight (a blocking hand-off, a reply) and nothing registered with the
        // drivers, that woke a worker per task to find nothing and park again (0.8 unparks
        // and ~20 µs of spin per blocking_spawn op at 2-4 workers). Nothing is lost, by the
        // argument of `park`'s last-searcher check (Idle.zig, "Rules"): a pusher publishes
        // its task, then does a read-modify-write on `state`; this decrement is one too, so
        // either the pusher's comes later and sees searching == 0 (it wakes a worker), or it
        // came first and this worker's queue checks, after the decrement, see the task.
        if (shared.idle.transitionWorkerFromSearching() and shared.notifyIfNeeded()) {
            self.metrics.bump(.unparks_issued);
        }
    }
    // One budget for the task and the LIFO chain it starts (Tokio does the same).
    const scope = budget.Scope.begin(budget.units_per_poll);
    defer scope.end();
    self.lifo_polls = 0;
    self.run_handoffs = 0;
    self.pollTask(task);
    while (self.lifo) |next| {
        self.lifo = null;
        if (budget.exhausted()) {
            self.pushBack(next);
            break;
        }
        self.countLifoPoll(false);
        self.pollTask(next);
    }
    // With the slot disabled the last poll could only queue at the back.
    assert(self.lifo_enabled or self.lifo == null);
    self.lifo_enabled = true;
}

/// Whether a task waits in this worker's local queue or in the inject queue: what the LIFO
/// slot's task would run ahead of (`countLifoPoll`, `settleLifoOnFinish`).
fn othersQueued(self: *Worker) bool {
    return !self.local().isEmpty() or !self.shared.inject.isEmpty();
}

/// A poll from the LIFO slot (the loop of `runTask`, or a direct hand-off): counted, and the
/// slot closes for the rest of the chain at `lifo_polls_max` — for a direct hand-off only if
/// another task waits (in the local or the inject queue), else at `handoff_polls_max`.
fn countLifoPoll(self: *Worker, handoff: bool) void {
    self.lifo_polls += 1;
    assert(self.lifo_polls <= handoff_polls_max);
    if (self.lifo_polls >= lifo_polls_max) {
        const alone = handoff and self.lifo_polls < handoff_polls_max and !self.othersQueued();
        if (!alone) self.lifo_enabled = false;
    }
    self.metrics.bump(.lifo_hits);
}

fn pollTask(self: *Worker, task: *Header) void {
    if (!self.beginPoll(task)) return;
    assert(self.polled == null and self.handoff_from == null);
    self.polled = task;
    const ready = task.vtable.poll(task);
    // The task that came back: `task`, or the last one a direct hand-off ran.
    const back = self.polled.?;
    self.polled = null;
    assert(self.handoff_from == null); // Every hand-off was finished on landing.
    if (ready) self.finishPolled(back) else self.afterPending(back);
    assert(self.completed_early == null);
}

/// A polled task is ready (its stack, for a fiber, already released): complete it and drop
/// the poller's and the owned list's references — or only drop them, if it completed on its
/// own stack (`takeHandoff`).
fn finishPolled(self: *Worker, task: *Header) void {
    if (self.completed_early == task) {
        self.completed_early = null;
        return task.refDec(2);
    }
    self.shared.finishTask(task);
}

/// Counts a poll of `task` (queued, taken by this worker) and makes it `running`; true if it is
/// to be polled, false if its cancellation was requested — then it is cancelled and finished
/// here instead (by `pollTask` and by a direct hand-off alike). A cancellation that cannot
/// finish without blocking this thread (`Header.VTable.cancel` false) leaves the task as a
/// pending poll would: idle, or queued again if it was woken meanwhile.
fn beginPoll(self: *Worker, task: *Header) bool {
    self.metrics.bump(.polls);
    switch (task.transitionToRunning()) {
        .poll => return true,
        .cancel => {
            if (task.vtable.cancel(task)) {
                self.shared.finishTask(task);
            } else {
                self.afterPending(task);
            }
            return false;
        },
    }
}

/// A spawn's insert into the owned list: none on a worker of this runtime — the task is linked
/// when it first goes idle (`linkOwned`), since until then it is queued or running, where
/// shutdown finds it anyway; from any other thread at once, where the spawn may race the
/// list's close at shutdown and is refused (`error.Shutdown`) after it.
pub fn insertSpawned(shared: *Shared, task: *Header) error{Shutdown}!void {
    if (currentOf(shared) != null) return;
    try shared.owned.insert(task);
}

/// Links `task` (polled here, going idle) into this worker's own owned-list shard. The list
/// closes only after the workers exited (Runtime.deinit): this insert is never refused.
pub fn linkOwned(self: *Worker, task: *Header) void {
    assert(current_worker == self);
    const owned = &self.shared.owned;
    owned.insertAt(task, owned.workerShard(self.index)) catch unreachable;
}

/// A poll of `task` returned pending: it goes idle, or back to the queue if it was woken
/// during the poll.
fn afterPending(self: *Worker, task: *Header) void {
    // Idle from here on (unless re-queued): listed for shutdown, if the spawn did not list it
    // ("Owned lazily" in fiber/task.zig, which links fibers itself, before their flag check).
    // The list closes only after the workers exited: this insert cannot be refused.
    if (!task.in_owned.load(.monotonic)) self.linkOwned(task);
    switch (task.transitionToIdle()) {
        .idle => {},
        .reschedule => {
            // Woken during its own poll: a yield, or its budget ran out.
            if (budget.exhausted()) self.metrics.bump(.budget_yields);
            self.scheduleLocal(task, true);
        },
    }
}

/// Direct hand-off, on the stack of `from` (a fiber task polled on this worker, now suspended,
/// or finished when `retire` is given: the fiber layer's `retireStack`): the task in the LIFO
/// slot if it is a fiber task (its vtable's poll is `fiber_poll`) that the LIFO chain may run
/// now, made `running` and counted as a poll; `from`'s post-poll transition is owed until
/// `finishHandoff`. Null: `from` switches back to the worker. A task whose cancellation was
/// requested is cancelled here instead (as `pollTask` would) and null returned.
///
/// A finished fiber with no successor in sight (the LIFO slot and the local queue empty)
/// completes here, on its own stack ("Completing on the fiber's stack" in fiber/task.zig):
/// its stack retired first, its references kept until the stack is given back. Its awaiter,
/// woken into the LIFO slot by the completion, is then the successor: one switch instead of
/// two, and no trip through the loop (io_spawn: spawn, await).
pub fn takeHandoff(self: *Worker, from: *Header, fiber_poll: *const fn (*Header) bool, retire: ?*const fn (*Header) void) ?*Header {
    assert(current_worker == self);
    // Only from a fiber this worker's `pollTask` is running (not one resumed some other way).
    if (self.polled != from) return null;
    assert(self.handoff_from == null and self.completed_early == null);
    if (retire) |retire_stack| {
        self.settleLifoOnFinish();
        if (self.lifo == null and self.popped_head == null and self.mayHandOff() and self.local().isEmpty()) {
            retire_stack(from);
            self.shared.completeTask(from);
            self.completed_early = from;
            self.metrics.bump(.early_completions);
            hook.reachedBy(.fiber_completed_early, self);
        }
    }
    const next = self.handoffSuccessor(fiber_poll) orelse return null;
    if (!self.beginPoll(next)) return null;
    self.metrics.bump(.handoffs);
    self.handoff_from = from;
    self.handoff_finished = retire != null;
    self.polled = next;
    return next;
}

/// Whether this `runTask` may make another hand-off (its budget and `handoff_run_max`).
fn mayHandOff(self: *Worker) bool {
    return !budget.exhausted() and self.run_handoffs < handoff_run_max;
}

/// The task a direct hand-off switches to: the fiber task in the LIFO slot (a LIFO poll), or,
/// with the slot empty, the head of the local queue if it is a fiber task ("Direct hand-off",
/// in the module comment). Null: the fiber switches back to the worker, which runs the LIFO
/// task (a task that is not a fiber's, or a closed slot), the popped head, or its loop.
fn handoffSuccessor(self: *Worker, fiber_poll: *const fn (*Header) bool) ?*Header {
    if (!self.mayHandOff()) return null;
    if (self.lifo) |next| {
        if (next.vtable.poll != fiber_poll or !self.lifo_enabled) return null;
        self.lifo = null;
        self.countLifoPoll(true);
        self.run_handoffs += 1;
        return next;
    }
    // A head popped before (and not yet run: a LIFO task ran first) is the next task itself.
    if (self.popped_head != null) return null;
    // Taking the head stands for an iteration of the loop, so the loop keeps every iteration
    // that has something else due: the maintenance (timers, the I/O driver) or the inject
    // queue's turn. Without this a run of hand-offs put up to 64 polls between two of the
    // loop's iterations, and I/O readiness waited for them (ampere.io io_tcp_echo_conns, 128
    // connections at 4 workers: 6.8 -> 9.0 us per echo).
    if (self.until_maintenance == 1 or self.until_inject_first == 1) return null;
    const head = self.local().pop() orelse return null;
    if (head.vtable.poll != fiber_poll) {
        self.popped_head = head; // The worker's next task: it runs on the worker's stack.
        return null;
    }
    // What the loop's iteration would do: begin it, count down (neither is due: checked above),
    // and run the head as a new chain, its LIFO slot open.
    self.beginIteration();
    const options = &self.shared.options;
    const maintenance_due = countdown(&self.until_maintenance, options.event_interval);
    const inject_due = countdown(&self.until_inject_first, options.global_queue_interval);
    assert(!maintenance_due and !inject_due);
    self.lifo_polls = 0;
    self.lifo_enabled = true;
    self.run_handoffs += 1;
    self.metrics.bump(.queue_handoffs);
    return head;
}

/// A fiber polled on this worker finished (before its completion is published, so before the
/// wake-ups of its join and group waiters): a task it woke into the LIFO slot goes to the back
/// of the local queue if other tasks wait in it or in the inject queue ("A finished fiber hands
/// its LIFO slot to the queue"). It is queued as a yielded task is, announced to idle workers.
pub fn settleLifoOnFinish(self: *Worker) void {
    assert(current_worker == self);
    const task = self.lifo orelse return;
    // Alone, it is the next task either way: keep the hand-off.
    if (!self.othersQueued()) return;
    self.lifo = null;
    self.metrics.bump(.lifo_requeues);
    self.pushBack(task);
    if (self.shared.notifyParkedForLocalPush()) self.metrics.bump(.unparks_issued);
}

/// On landing after a direct hand-off (the stack of the task handed to): the owed post-poll
/// transition of the task that handed off — idle (or re-queued), or, if it finished, its
/// stack released (`release`, the fiber layer's) and the task finished (`finishPolled`:
/// completed, unless it completed on its own stack, and its references dropped), in that
/// order, as `pollTask` does for a ready fiber. Nothing when the fiber was resumed by a poll.
pub fn finishHandoff(self: *Worker, release: *const fn (*Header) void) void {
    assert(current_worker == self);
    const from = self.handoff_from orelse return;
    self.handoff_from = null;
    if (self.handoff_finished) {
        release(from);
        self.finishPolled(from);
    } else {
        self.afterPending(from);
    }
}

/// Queues a task woken on this worker's thread (see the module comment for where it goes).
fn scheduleLocal(self: *Worker, task: *Header, yielded: bool) void {
    assert(current_worker == self);
    assert(task.load() & Header.scheduled != 0);
    self.metrics.bump(.local_schedules);
    if (yielded) {
        self.pushBack(task);
    } else if (!self.lifo_enabled) {
        // The LIFO chain hit `lifo_polls_max`: the task goes to the back of the queue. Into an
        // otherwise empty queue it is simply this worker's next task, in the position of a
        // LIFO-slot task (which Tokio does not announce either): it runs when the current
        // poll returns. Waking a worker for it only hands the next hop of a serial chain (a
        // lock hand-off, a ping-pong) to another CPU, which then fights this one for the same
        // lock or channel: with a contended mutex at 2 workers that was a wake-up every ~4
        // ops and 2x the CPU per op. A searcher may still steal it. The notification is
        // deferred, not dropped: should the current poll run on past `deferred_bound_ns`,
        // the driver owner issues it (`deferNotification`, "Deferred notifications").
        const was_empty = self.local().isEmpty();
        self.pushBack(task);
        if (was_empty) return self.deferNotification();
    } else {
        const previous = self.lifo;
        self.lifo = task;
        const displaced = previous orelse return; // Runs next; nothing for others to take.
        self.pushBack(displaced);
    }
    // This worker is running and will pop the task itself if nobody comes for it.
    if (self.shared.notifyParkedForLocalPush()) self.metrics.bump(.unparks_issued);
}

fn stealWork(self: *Worker) ?*Header {
    assert(self.lifo == null and self.popped_head == null);
    assert(self.local().isEmpty()); // Only a worker without local work steals.
    const shared = self.shared;
    self.help().doze_wanted = false;
    assert(!self.help().helping()); // `nextTask` ended it.
    if (!self.is_searching) {
        if (!shared.idle.transitionWorkerToSearching()) return null;
        self.is_searching = true;
        self.metrics.bump(.searches);
    }
    const restrained = self.help().restrainedNow();
    const count: u32 = @intCast(shared.remotes.len);
    const start: u32 = @intCast(self.nextRandom() % count);
    var offset: u32 = 0;
    while (offset < count) : (offset += 1) {
        const victim_index = (start + offset) % count;
        if (victim_index == self.index) continue;
        if (restrained and !self.victimStuck(victim_index)) continue;
        if (shared.remotes[victim_index].local.stealInto(self.local())) |stolen| {
            assert(stolen.count > 0 and stolen.count <= LocalQueue.capacity / 2);
            self.metrics.bump(.steals);
            self.metrics.bumpBy(.tasks_stolen, stolen.count);
            self.noteTaken(stolen.count);
            return stolen.first;
        }
    }
    if (restrained and !self.injectStuck()) return null;
    return self.takeFromInject();
}

/// Restrained search: whether worker `victim`'s queue holds tasks and nobody took one since
/// this worker's previous look (its owner is stuck in one poll). Otherwise records the count
/// for the next look and asks for a doze if the queue holds tasks.
fn victimStuck(self: *Worker, victim: u32) bool {
    const queue = &self.shared.remotes[victim].local;
    const bit = @as(u64, 1) << @intCast(victim);
    if (queue.isEmpty()) {
        self.help().seen_valid &= ~bit;
        return false;
    }
    const taken = queue.takenCount();
    const seen = &self.help().seen_taken[victim];
    if (self.help().seen_valid & bit != 0 and seen.* == taken) return true;
    seen.* = taken;
    self.help().seen_valid |= bit;
    self.help().doze_wanted = true;
    return false;
}

/// Restrained search: whether to take from the inject queue: it holds tasks and no worker is
/// running (nobody else would take them) or nobody took one since the previous look.
fn injectStuck(self: *Worker) bool {
    const inject = &self.shared.inject;
    if (inject.isEmpty()) {
        self.help().seen_inject_valid = false;
        return false;
    }
    if (!self.shared.idle.othersWorking(false)) return true;
    const popped = inject.poppedCount();
    if (self.help().seen_inject_valid and self.help().seen_inject_popped == popped) return true;
    self.help().seen_inject_popped = popped;
    self.help().seen_inject_valid = true;
    self.help().doze_wanted = true;
    return false;
}

/// This worker, out of local work, took `taken` tasks from another worker's queue or the
/// inject queue: a help (`HelpPolicy`) if another worker is running — the take then moves
/// work away from it. Nobody running (remote wake-ups of an idle runtime, a blocking-pool
/// hand-off): nothing moves, nothing to judge.
fn noteTaken(self: *Worker, taken: u64) void {
    if (!self.help().tracking()) return;
    if (!self.shared.idle.othersWorking(!self.is_searching)) return;
    self.help().beginHelp(clock.nowNs(), self.metrics.get(.polls), taken);
}

/// The search found work (`runTask`) or gave up (`park`): the restrained search's looks are
/// forgotten.
fn endSearch(self: *Worker) void {
    self.help().seen_valid = 0;
    self.help().seen_inject_valid = false;
}

/// A restrained searcher's sleep between two looks (`HelpPolicy.doze_ns`), still counted as
/// searching. In the I/O driver when it can claim the drivers (nobody attends them while it
/// dozes otherwise: an event or a due timer ends the doze and its tasks land here); on its
/// futex when another worker owns them. Nobody unparks a searcher but shutdown, which ends it.
fn doze(self: *Worker) void {
    assert(self.is_searching);
    assert(self.lifo == null and self.local().isEmpty());
    const shared = self.shared;
    const dozing = &shared.remotes[self.index].dozing;
    dozing.store(true, .seq_cst);
    defer dozing.store(false, .monotonic);
    // The worker it waits for may have gone to sleep meanwhile (`Shared.kickDozers`).
    if (!shared.idle.othersWorking(false)) return;
    self.metrics.bump(.dozes);
    if (self.claimDrivers()) {
        defer shared.leaveOwnership();
        self.stopWatching(); // The owner attends the drivers itself (as in `parkOnce`).
        if (self.parker().pollIo()) return;
        const timeout_ns = @min(shared.ownerTimeoutNs() orelse HelpPolicy.doze_ns, HelpPolicy.doze_ns);
        if (timeout_ns > 0) self.parker().parkIo(timeout_ns);
        _ = shared.driver.processIfDue();
        return;
    }
    _ = self.parker().parkTimeout(HelpPolicy.doze_ns);
}

fn park(self: *Worker) void {
    const shared = self.shared;
    assert(self.lifo == null and self.popped_head == null);
    if (!self.local().isEmpty()) return;
    hook.reachedBy(.worker_before_sleep, self);
    self.endSearch();
    const last_searcher = shared.idle.transitionWorkerToParked(self.index, self.is_searching);
    self.is_searching = false;
    self.metrics.bump(.parks);
    if (!shared.idle.othersWorking(false)) shared.kickDozers(self.index);
    if (last_searcher and shared.notifyIfWorkPending()) self.metrics.bump(.unparks_issued);
    while (!shared.isShuttingDown()) {
        const was_owner = self.parkOnce();
        self.metrics.bump(.park_wakeups);
        _ = shared.driver.processIfDue();
        if (self.transitionFromParked()) {
            // A driver owner that leaves to run work it found itself (a timer or I/O event
            // scheduled it here) must not leave the drivers unattended while another worker
            // sleeps without a timeout (see "The driver owner"). A notified one is searching:
            // its last-searcher check in `runTask` does the same.
            if (was_owner and !self.is_searching and shared.notifyIfDriversUnattended()) {
                self.metrics.bump(.unparks_issued);
            }
            return;
        }
    }
}

/// Claims `driver.owner` for this worker if nobody owns the drivers (seq_cst: successive turns
/// are ordered, see "The driver owner"). Released by `Shared.leaveOwnership`, or by
/// `maintenance`'s store after its non-blocking turn.
fn claimDrivers(self: *Worker) bool {
    return self.shared.driver.owner.cmpxchgStrong(Driver.no_owner, self.index, .seq_cst, .seq_cst) == null;
}

/// Sleeps until unparked, spinning first if the spin policy says so. A worker that claims
/// driver ownership sleeps in the I/O driver instead, until an event, the next timer deadline
/// or an unpark (see "The driver owner" in the module comment). True if it was the owner.
/// The spinning slot is given back as soon as the spin ends, before the thread blocks: a
/// sleeper holding it would keep other workers from spinning and make notifiers choose it
/// for the "cheap" wake-up (a memory write) that is really a futex or eventfd wake-up.
fn parkOnce(self: *Worker) bool {
    hook.reachedBy(.worker_before_owner_claim, self);
    if (self.claimDrivers()) {
        defer self.shared.leaveOwnership();
        self.stopWatching(); // The owner attends the drivers itself.
        // Events already queued come first: their tasks run without any sleep or spin.
        if (self.parker().pollIo()) return true;
        // A deferred notification whose worker is still in the same poll is issued now.
        if (self.shared.watchDeferred()) self.metrics.bump(.unparks_issued);
        // Read the deadline *after* becoming the owner: a registration that stored an earlier
        // deadline before our compare-and-swap saw no owner and kicked nobody (or another
        // sleeper), so we must see its deadline here. Store-then-load on both sides (owner vs
        // next_deadline_tick), all seq_cst.
        const timeout_ns = self.shared.ownerTimeoutNs();
        const limit_ns = timeout_ns orelse std.math.maxInt(u64);
        if (limit_ns == 0) return true; // A timer is due: the caller fires it.
        const spin_ns = @min(self.claimSpin(), limit_ns);
        const woken = spin_ns > 0 and self.spin.spinIo(self.parker(), spin_ns, self.recorder());
        self.releaseSpin();
        if (!woken) self.parker().parkIo(if (timeout_ns) |ns| ns - spin_ns else null);
        return true;
    }
    if (self.watching or self.claimWatch()) return self.watchOnce();
    const spin_ns = self.claimSpin();
    const woken = spin_ns > 0 and self.spin.spin(self.parker(), spin_ns, self.recorder());
    self.releaseSpin();
    if (!woken) self.parker().park();
    return false;
}

fn claimWatch(self: *Worker) bool {
    if (!self.shared.claimWatch(self.index)) return false;
    self.watching = true;
    self.watch_timed_out = false;
    self.watch_quiet = 0;
    self.watch_seen_leaves = self.shared.driver_watch.leaves.load(.seq_cst);
    return true;
}

fn stopWatching(self: *Worker) void {
    if (!self.watching) return;
    self.shared.releaseWatch(self.index);
    self.watching = false;
    self.watch_timed_out = false;
}

/// The watcher's park (see "Liveness" in Shared.zig): sleeps at most `watch_bound_ns`, so that
/// drivers an owner left are taken over (the caller parks again through the owner claim).
/// Gives the watch up when notified, or after `watch_quiet_max` bounds in which no owner left
/// (then it sleeps like any other worker). Returns false, like a non-owner park.
fn watchOnce(self: *Worker) bool {
    const shared = self.shared;
    assert(self.watching);
    // Spin only before the first timed sleep: a watch that times out every bound must not
    // spin every bound.
    const spin_ns = if (self.watch_timed_out) 0 else self.claimSpin();
    const spun = spin_ns > 0 and self.spin.spin(self.parker(), spin_ns, self.recorder());
    self.releaseSpin();
    if (spun or self.parker().parkTimeout(Shared.watch_bound_ns)) {
        self.stopWatching(); // Notified: off to work.
        return false;
    }
    self.watch_timed_out = true;
    const leaves = shared.driver_watch.leaves.load(.seq_cst);
    self.watch_quiet = if (leaves == self.watch_seen_leaves) self.watch_quiet + 1 else 0;
    self.watch_seen_leaves = leaves;
    if (!shared.driversBusy()) {
        self.stopWatching();
        return false;
    }
    if (self.watch_quiet < Shared.watch_quiet_max or shared.driver.owner.load(.seq_cst) == Driver.no_owner) {
        return false; // The caller parks again: owner claim first, then the watch.
    }
    // `watch_quiet_max` bounds without a leave: give the watch up, then look once more
    // (store-then-load against a leaving owner's store-then-load). An owner that leaves
    // between the decision and the store saw a watcher and woke nobody: the look after the
    // store is what keeps its drivers attended.
    hook.reachedBy(.watcher_before_give_up, self);
    self.stopWatching();
    if (shared.driver_watch.leaves.load(.seq_cst) != leaves) return false;
    if (shared.driver.owner.load(.seq_cst) == Driver.no_owner) return false;
    self.parker().park();
    return false;
}

/// How long this park may spin (0: sleep at once): the policy's plan, and the runtime's
/// spinning slot when the plan needs it.
fn claimSpin(self: *Worker) u64 {
    const plan = self.spin.plan();
    if (plan.backed_off) self.metrics.bump(.spins_backed_off);
    if (plan.spin_ns == 0) return 0;
    if (!self.shared.idle.tryStartSpinning(self.index, plan.needs_slot)) {
        self.metrics.bump(.spins_denied);
        return 0;
    }
    return plan.spin_ns;
}

/// Gives the spinning slot back if this worker holds it (after a spin, before blocking).
fn releaseSpin(self: *Worker) void {
    self.shared.idle.stopSpinningIfHeld(self.index);
}

/// The LIFO-cap hop just queued (`scheduleLocal`) runs when the current poll returns; if that
/// poll runs on, the driver owner notifies a worker for it (`Shared.watchDeferred`).
fn deferNotification(self: *Worker) void {
    assert(!self.deferred_published or self.shared.remotes[self.index].deferred.load(.monotonic) != 0);
    // Never 0 (that means none); a new value per loop iteration, so the owner can tell a poll
    // that is still running from a later one.
    const token = self.tick | (1 << 31);
    self.deferred_published = true;
    self.shared.publishDeferred(self.index, token);
}

/// Back in the run loop: the poll that deferred a notification returned, and this worker
/// takes its queued task itself (or a thief did).
fn withdrawDeferred(self: *Worker) void {
    assert(self.deferred_published);
    self.deferred_published = false;
    self.shared.remotes[self.index].deferred.store(0, .monotonic);
}

/// Every `event_interval` ticks: fire due timers and, when nobody owns the drivers (a parked
/// owner already receives the events), turn the I/O driver without blocking. Tasks the events
/// wake land in this worker's queues.
fn maintenance(self: *Worker) void {
    const shared = self.shared;
    _ = shared.driver.processIfDue();
    if (!shared.io.hasRegistrations()) return;
    if (!self.claimDrivers()) return;
    _ = shared.io.turn(0);
    shared.driver.owner.store(Driver.no_owner, .seq_cst);
}

/// After a wake-up: true if the worker should run again, false to go back to sleep.
fn transitionFromParked(self: *Worker) bool {
    const shared = self.shared;
    assert(!self.is_searching);
    // Timers fired after the wake-up may have scheduled tasks here (LIFO slot or queue).
    if (self.lifo != null or !self.local().isEmpty()) {
        // Woken by its own timer with work: unpark itself (not as a searcher), unless a
        // notifier already did — then it was counted as searching.
        self.is_searching = !shared.idle.unparkWorkerById(self.index);
        if (self.is_searching) self.metrics.bump(.unparks_received);
        return true;
    }
    if (shared.idle.isParked(self.index)) return false;
    self.is_searching = true; // Notified workers start out searching.
    self.metrics.bump(.unparks_received);
    return true;
}

fn nextRandom(self: *Worker) u64 {
    // xorshift64*: victim selection only needs to spread stealers out.
    var x = self.rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    self.rng_state = x;
    return x *% 0x2545f4914f6cdd1d;
}
