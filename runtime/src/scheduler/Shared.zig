//! The part of one runtime's scheduler that every worker, waker and spawner shares (Tokio's
//! `multi_thread::Shared` + `Handle`): the stealable half of each worker (`Remote`: its run
//! queue and its parker), the inject queue, idle tracking, the owned-task list, the timer
//! driver, the I/O driver, and the operations on them that any thread may call — waking a parked worker,
//! completing a task, cancelling one at shutdown.
//!
//! What only a worker's own thread touches (its LIFO slot, tick, searching flag) lives in
//! `Worker`, which imports this file; this file imports no worker code, so the scheduler's
//! modules form no import cycle: `Runtime` -> `Scheduler` -> `Worker` -> `Shared` -> queues.
//!
//! ## Task completion
//!
//! A task whose output (or `error.Cancelled`) was stored by its poller is completed by
//! `finishTask`: `running -> complete` (which wakes a registered JoinHandle), unlink from the
//! owned list, drop the poller's and the list's references. At shutdown, tasks nobody will
//! poll again are cancelled by the same path (`cancelQueuedTask`, `cancelIdleTask`).
//!
//! ## Cache lines
//!
//! Workers read some fields on every loop iteration or every wake (`shutting_down`,
//! `options`, `remotes`, `task_scheduler`, `owned`, `runtime`) and never write them; other
//! fields are written all the time by whichever thread spawns, wakes or parks (`inject`,
//! `idle`, `next_task_id`, `driver`, `external_metrics`). Each of the written groups is a
//! cache-line aligned type, so it owns whole lines and never shares one with the read-mostly
//! fields or with another group (checked by a test). Before this layout, `next_task_id`
//! (a read-modify-write per spawn), `shutting_down` (a load per worker loop iteration) and
//! `task_scheduler` (read by every wake) sat in one 64-byte line, and `inject` and
//! `Idle.state` (a read-modify-write per task queued behind another) in another: on many
//! cores each spawn invalidated a line that every worker was reading.
//!
//! ## Waking workers
//!
//! `notifyParked` follows the idle protocol of `Idle.zig`: the caller has published work
//! (seq_cst, see InjectQueue/LocalQueue), then asks `Idle` whether a sleeper must be woken.
//!
//! ## Liveness: the drivers are never left unattended
//!
//! While a descriptor is registered or a timer is armed, some worker must be able to turn the
//! drivers within a bound: the owner blocked in `epoll_wait`, an awake worker, or the
//! *watcher*. The watcher (`driver_watch.watcher`) is at most one sleeper other than the owner
//! that parks with a timeout of `watch_bound_ns` (1 ms) instead of none; each time it wakes it
//! parks again through the owner claim, so drivers left without an owner are taken over
//! within a bound. When the owner leaves to run a task (woken by an event, a timer or a
//! notification) and no other worker is awake:
//!
//! - a watcher exists: nobody is woken. A request/response exchange (the owner wakes, runs
//!   the task that answers, and parks again as the owner) costs no futex wake-up per event;
//!   the first version of this rule woke a sleeper on every leave (0.2-0.7 unparks per TCP
//!   round trip, tcp_pingpong 11.7 -> 15.4 us).
//! - none: a sleeper is woken (`notifyIfDriversUnattended`, from the leaving owner or, if it
//!   was notified, from its last-searcher check: `notifyIfNeeded`). It finds no work, parks,
//!   and becomes the owner or the watcher.
//!
//! A parking worker claims the watch when something is registered or armed and nobody holds
//! it. The watcher gives it up when notified, when it becomes the owner, or after
//! `watch_quiet_max` (8) bounds in a row in which no owner left (`driver_watch.leaves`, bumped
//! by every owner that stops owning): an idle runtime stops waking after ~8 ms. Giving up is store-then-load (`watcher = none`,
//! then `leaves` and `owner`) against the leaving owner's store-then-load (`owner = none`,
//! `leaves + 1`, then `watcher`), all seq_cst: either the owner sees no watcher and wakes a
//! sleeper, or the watcher sees the leave and keeps watching. Nothing registered, nothing
//! armed: nobody watches and nobody is woken (blocking_spawn keeps its saving). The sleepers
//! are read after a parking worker's seq_cst registration, which precedes its claim of
//! `owner`: either the parker claims ownership, or the leaving owner sees it asleep.
//!
//! ## Deferred notifications
//!
//! A task queued because a LIFO chain hit its cap wakes nobody (`Worker.scheduleLocal`): it
//! runs when the current poll returns. If that poll runs on — a long computation, a blocking
//! call — the task must not wait for it while another worker sleeps. So the worker publishes
//! the deferral in `Remote.deferred` (a new token per loop iteration) and withdraws it when
//! the poll returns; the first deferral *arms* the watch (`watch.armed`) and kicks the driver
//! owner (or a sleeper, which becomes owner). While armed, the owner sleeps at most
//! `deferred_bound_ns` and at each wake-up compares every token with the one it saw the time
//! before (`watchDeferred`): a token seen twice belongs to a poll that outlasted a bound, and
//! the owner then issues the notification (`notifyParked`) — once per token. No deferral
//! left at `watch_disarm_looks` (2) looks in a row: it disarms. (At the first look, which a
//! kick makes at once, a chain's deferral is usually withdrawn already; disarming there made
//! every owner wake-up a kick: a one-pair ping-pong at 2 workers kicked the owner every ~20 us,
//! an eventfd write each, and ran at 240 ns/op against 159 with the rule.) Store-then-load on
//! both sides (the worker stores its token then reads `armed`; the owner stores
//! `armed = false` then reads the tokens), all seq_cst: either the
//! worker sees the watch disarmed and kicks, or the owner sees the token and re-arms. A chain
//! that defers every few hops and keeps going costs one owner wake-up per bound (1 kHz), not a
//! wake-up per hop.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const Options = @import("../Options.zig");
const context = @import("../context.zig");
const hook = @import("../hook.zig");
const Header = @import("../task/Header.zig");
const Parker = @import("../Parker.zig");
const Driver = @import("../time/Driver.zig");
const IoDriver = @import("../io/Driver.zig");
const TaskBlocks = @import("TaskBlocks.zig");
const LocalQueue = @import("LocalQueue.zig");
const InjectQueue = @import("InjectQueue.zig");
const Idle = @import("Idle.zig");
const OwnedTasks = @import("OwnedTasks.zig");
const Metrics = @import("Metrics.zig");
const HelpPolicy = @import("HelpPolicy.zig");

const Shared = @This();

/// What other threads may touch of worker `i`: `remotes[i]`.
pub const Remote = struct {
    /// Owner pushes and pops; other workers steal (LocalQueue's protocol).
    local: LocalQueue = .{},
    /// The worker thread parks on it (on its futex, or in the I/O driver when it is the driver
    /// owner; and spins reading it); anyone unparks it. On a line of its own, apart from the
    /// queue's slots that thieves read.
    parker: Parker align(std.atomic.cache_line) = .{},
    /// The worker is dozing (`Worker.doze`): a restrained searcher asleep between two looks.
    /// Set (seq_cst) by the worker before it re-checks that somebody works, cleared after the
    /// doze; read by a worker going to sleep, after its seq_cst registration, which unparks a
    /// dozer when nobody works any more (`kickDozers`).
    dozing: std.atomic.Value(bool) = .init(false),
    /// A notification the worker deferred (`Worker.deferNotification`): 0 for none, otherwise
    /// a token that changes with every loop iteration of the worker. Written by the worker
    /// (seq_cst when published, see "Deferred notifications"; monotonic when withdrawn), read
    /// by the driver owner. Its own line: the worker writes it every few hops of a LIFO chain.
    deferred: std.atomic.Value(u32) align(std.atomic.cache_line) = .init(0),
    /// The token the driver owner saw at its previous look, and the one it last notified
    /// for. Driver owner only (ownership hand-offs are seq_cst, so these need no atomics, like
    /// the I/O driver's event buffer).
    deferred_seen: u32 = 0,
    deferred_issued: u32 = 0,
    /// This worker's steal restraint (`HelpPolicy`). This worker's thread only.
    help: HelpPolicy = .{},
    /// Task blocks of this worker freed on other workers (`TaskBlocks`, "Blocks freed
    /// elsewhere"): pushed by them, taken whole by this worker. Its own line: the pushers
    /// write it once per freed task.
    blocks_returned: TaskBlocks.ReturnList align(std.atomic.cache_line) = .{},
};

/// The longest a LIFO-cap hop waits for a worker while the poll of its worker runs on, before
/// the driver owner notifies one: it is noticed within one to two bounds. Long enough that a
/// serial chain (a lock hand-off takes ~50 ns) is never split for it, short enough that a hop
/// queued behind a long poll is not stuck behind it (it waited 300 ms with the notification
/// dropped).
pub const deferred_bound_ns: u64 = 1 * std.time.ns_per_ms;

/// Whether the driver owner watches deferred notifications (it then sleeps at most
/// `deferred_bound_ns`). Its own line: deferring workers read it every few hops.
pub const Watch = struct {
    armed: std.atomic.Value(bool) align(std.atomic.cache_line) = .init(false),
    /// Looks in a row that found no deferral (`watchDeferred`); the watch disarms at
    /// `watch_disarm_looks`. Driver owner only (ownership hand-offs are seq_cst, so it needs no
    /// atomics, like `Remote.deferred_seen`).
    quiet_looks: u32 = 0,
};

/// Looks without a deferral after which the watch disarms: the first look after a kick comes at
/// once, while a chain that defers every few hops has usually withdrawn the deferral already,
/// so disarming then made every owner wake-up a kick (pp1 at 2 workers: a kick every ~20 us, an
/// eventfd write each). The second look comes a bound later.
pub const watch_disarm_looks: u32 = 2;

/// The longest a watcher sleeps (see "Liveness").
pub const watch_bound_ns: u64 = 1 * std.time.ns_per_ms;
/// A watcher gives the watch up after this many bounds in a row without a leave: an idle
/// runtime stops its watcher's wake-ups after ~8 ms, and a workload whose events come every
/// few milliseconds (a 1 ms timer, under ThreadSanitizer too) keeps it.
pub const watch_quiet_max: u32 = 8;

/// `Shared.external_waits`: a count on a line of its own (written by threads outside the
/// runtime, at each blocking wait).
pub const ExternalWaits = struct {
    count: std.atomic.Value(u32) align(std.atomic.cache_line) = .init(0),
};

/// The drivers' watcher (see "Liveness"). Its own line: every leaving owner writes `leaves`.
pub const DriverWatch = struct {
    pub const none = std.math.maxInt(u32);
    /// The index of the watching worker, or `none`. Seq_cst (see "Liveness").
    watcher: std.atomic.Value(u32) align(std.atomic.cache_line) = .init(none),
    /// How many times a driver owner stopped owning. Seq_cst (see "Liveness").
    leaves: std.atomic.Value(u64) = .init(0),
};

allocator: Allocator,
options: Options,
remotes: []Remote,
inject: InjectQueue = .{},
idle: Idle,
owned: OwnedTasks,
driver: Driver,
/// The I/O driver (epoll). Turned only by the driver owner (`driver.owner`, see Worker.zig).
io: IoDriver,
/// Where this runtime's tasks go when woken or spawned (`Worker.submit`, context = self).
task_scheduler: Header.Scheduler,
next_task_id: TaskIds = .{},
/// Deferred notifications are being watched (see "Deferred notifications").
watch: Watch = .{},
driver_watch: DriverWatch = .{},
/// Events on threads that are not this runtime's workers (see `Metrics`: the only counter set
/// written with read-modify-writes, by any thread).
external_metrics: Metrics.Counters = .{},
/// Threads that are not workers inside `Runtime.blockOn` or an `ampere.Io` wait
/// (`enterExternalWait`/`leaveExternalWait`). Such a thread may be woken by the shutdown itself
/// (the future it awaits completes there) and still be on its way out through this runtime's
/// parkers and counters: `Runtime.deinit` waits for the count to reach 0 before it frees them.
/// Incremented monotonic (a wait that starts after `deinit` began is a use after free
/// regardless); decremented with release as the waiting thread's last access to the runtime,
/// read by `deinit` with acquire.
external_waits: ExternalWaits = .{},
/// Set once by shutdown (release); workers poll it (acquire) between tasks.
shutting_down: std.atomic.Value(bool) = .init(false),
/// The owning `Runtime`, type-erased, for the thread-local context of its threads.
runtime: *anyopaque,

pub const InitError = Allocator.Error || IoDriver.InitError;

/// Initialises in place (the timer driver's kick and the parkers' I/O driver point back into
/// `self`). `submit` is the routing function of this runtime's tasks (`Worker.submit`).
pub fn init(
    self: *Shared,
    allocator: Allocator,
    options: Options,
    runtime: *anyopaque,
    submit: *const fn (ctx: *anyopaque, task: *Header, yielded: bool) void,
) InitError!void {
    assert(options.workers >= 1 and options.workers <= Idle.workers_max);
    assert(options.global_queue_interval > 0 and options.event_interval > 0);
    const remotes = try allocator.alloc(Remote, options.workers);
    errdefer allocator.free(remotes);
    @memset(remotes, .{});
    const shard_count = std.math.ceilPowerOfTwo(usize, 4 * options.workers) catch unreachable;
    var owned = try OwnedTasks.init(allocator, shard_count);
    errdefer owned.deinit(allocator);
    self.* = .{
        .allocator = allocator,
        .options = options,
        .remotes = remotes,
        .idle = Idle.init(options.workers),
        .owned = owned,
        .driver = Driver.init(.{ .context = self, .function = kickTimer }),
        .io = undefined,
        .task_scheduler = .{ .context = self, .submit = submit },
        .runtime = runtime,
    };
    try self.io.init(allocator);
    for (self.remotes) |*remote| {
        remote.parker.io = &self.io;
        remote.help = HelpPolicy.init(options.steal_restraint);
    }
    assert(self.remotes.len == options.workers);
}

/// After every thread of the scheduler stopped and every task completed.
pub fn deinit(self: *Shared) void {
    assert(self.inject.isEmpty());
    for (self.remotes) |*remote| assert(remote.local.isEmpty());
    self.io.deinit();
    self.owned.deinit(self.allocator);
    self.allocator.free(self.remotes);
    self.* = undefined;
}

pub fn isShuttingDown(self: *const Shared) bool {
    return self.shutting_down.load(.acquire);
}

/// What a thread of this runtime puts in its thread-local context.
pub fn handles(self: *Shared) context.Handles {
    assert(self.remotes.len == self.options.workers);
    return .{ .runtime = self.runtime, .driver = &self.driver, .io = &self.io };
}

/// The task-id counter on a cache line of its own, for spawns from threads that are not this
/// runtime's workers (a worker counts its own: `Worker.nextTaskId`).
pub const TaskIds = struct {
    next: std.atomic.Value(u64) align(std.atomic.cache_line) = .init(1),
};

pub fn nextTaskId(self: *Shared) u64 {
    // Monotonic: ids only need to be unique (they select an owned-list shard).
    const id = self.next_task_id.next.fetchAdd(1, .monotonic);
    assert(id > 0); // No wrap-around in 2^64 spawns.
    return id;
}

/// A thread that is not a worker starts a blocking wait on this runtime (see `external_waits`).
pub fn enterExternalWait(self: *Shared) void {
    _ = self.external_waits.count.fetchAdd(1, .monotonic);
}

/// The end of that wait: the thread's last access to the runtime's memory.
pub fn leaveExternalWait(self: *Shared) void {
    const before = self.external_waits.count.fetchSub(1, .release);
    assert(before > 0);
}

/// The recorder for events on a thread that is not one of this runtime's workers.
pub fn externalRecorder(self: *Shared) Metrics.Recorder {
    return .{ .counters = &self.external_metrics, .owner = false };
}

/// Wakes an idle worker if work is available that nobody is looking for. True if it unparked
/// one (the caller counts `unparks_issued` in its own recorder).
pub fn notifyParked(self: *Shared) bool {
    const index = self.idle.workerToNotify() orelse return false;
    assert(index < self.remotes.len);
    self.remotes[index].parker.unpark();
    return true;
}

/// `notifyParked` for a running worker that queued a task in its own queue (the cheaper first
/// check of `Idle.workerToNotifyForLocalPush`).
pub fn notifyParkedForLocalPush(self: *Shared) bool {
    const index = self.idle.workerToNotifyForLocalPush() orelse return false;
    assert(index < self.remotes.len);
    self.remotes[index].parker.unpark();
    return true;
}

/// A searcher that found work and was the last one: wake another worker if a queue holds work
/// or the drivers would be left unattended. True if it unparked one.
pub fn notifyIfNeeded(self: *Shared) bool {
    if (self.notifyIfWorkPending()) return true;
    return self.notifyIfDriversUnattended();
}

/// Nobody owns the drivers although something is registered or armed: wake a sleeper, which
/// will become the owner (see "Liveness"). True if it unparked one.
pub fn notifyIfDriversUnattended(self: *Shared) bool {
    if (self.driver.owner.load(.seq_cst) != Driver.no_owner) return false;
    if (!self.driversBusy()) return false;
    // The watcher takes the drivers over within `watch_bound_ns`.
    if (self.driver_watch.watcher.load(.seq_cst) != DriverWatch.none) return false;
    return self.notifyParked();
}

/// Something is registered with the I/O driver or a timer may be armed.
pub fn driversBusy(self: *Shared) bool {
    return self.io.hasRegistrations() or self.driver.hasTimers();
}

/// A driver owner stops owning: store `owner = none`, then count the leave (seq_cst, before
/// the leaving owner reads `watcher`; see "Liveness").
pub fn leaveOwnership(self: *Shared) void {
    self.driver.owner.store(Driver.no_owner, .seq_cst);
    _ = self.driver_watch.leaves.fetchAdd(1, .seq_cst);
}

/// Worker `index`, parking: true if it holds the watch now (claimed it, or there is nothing
/// to watch and it does not).
pub fn claimWatch(self: *Shared, index: u32) bool {
    if (!self.driversBusy()) return false;
    if (self.driver_watch.watcher.load(.monotonic) != DriverWatch.none) return false;
    return self.driver_watch.watcher.cmpxchgStrong(DriverWatch.none, index, .seq_cst, .monotonic) == null;
}

/// The watcher gives the watch up.
pub fn releaseWatch(self: *Shared, index: u32) void {
    assert(self.driver_watch.watcher.load(.monotonic) == index);
    self.driver_watch.watcher.store(DriverWatch.none, .seq_cst);
}

/// Worker `index` deferred a notification (`token`, never 0): publish it and make sure the
/// driver owner watches (see "Deferred notifications").
pub fn publishDeferred(self: *Shared, index: u32, token: u32) void {
    assert(token != 0);
    self.remotes[index].deferred.store(token, .seq_cst);
    if (self.watch.armed.load(.seq_cst)) return; // The common case: a load, no write.
    if (self.watch.armed.swap(true, .seq_cst)) return;
    _ = self.kickOwnerOrSleeper();
}

/// Driver owner only: issues the deferred notifications whose poll outlasted a bound (see
/// "Deferred notifications"), and disarms the watch when none is left. True if it unparked a
/// worker.
pub fn watchDeferred(self: *Shared) bool {
    if (!self.watch.armed.load(.seq_cst)) return false;
    var pending = false;
    var overdue = false;
    for (self.remotes) |*remote| {
        const token = remote.deferred.load(.seq_cst);
        defer remote.deferred_seen = token;
        if (token == 0) continue;
        pending = true;
        if (token != remote.deferred_seen or token == remote.deferred_issued) continue;
        if (remote.local.isEmpty()) continue; // Taken by a searcher meanwhile.
        remote.deferred_issued = token;
        overdue = true;
    }
    if (overdue or pending) self.watch.quiet_looks = 0;
    if (overdue) return self.notifyParked();
    if (pending) return false;
    self.watch.quiet_looks += 1;
    if (self.watch.quiet_looks < watch_disarm_looks) return false; // Armed: a bound more.
    self.watch.quiet_looks = 0;
    self.watch.armed.store(false, .seq_cst);
    // A deferral published before the store above may have seen the watch armed and kicked
    // nobody: look once more.
    for (self.remotes) |*remote| {
        if (remote.deferred.load(.seq_cst) != 0) {
            self.watch.armed.store(true, .seq_cst);
            break;
        }
    }
    return false;
}

/// How long the driver owner may sleep: until the next timer, and at most a deferral bound
/// while the watch is armed. Null: no limit.
pub fn ownerTimeoutNs(self: *Shared) ?u64 {
    const timer_ns = self.driver.parkTimeoutNs();
    if (!self.watch.armed.load(.seq_cst)) return timer_ns;
    return @min(timer_ns orelse deferred_bound_ns, deferred_bound_ns);
}

/// A worker went to sleep and nobody works any more: a dozing searcher (waiting for a queue
/// that was moving) must look again now rather than at the end of its doze, or work that
/// arrives meanwhile waits for the doze: its search suppresses notifications. Store-then-load
/// on both sides (the sleeper's registration, then `dozing`; the dozer's `dozing`, then
/// `Idle.state`), all seq_cst: either the dozer sees nobody working and does not sleep, or the
/// sleeper sees it dozing and unparks it.
pub fn kickDozers(self: *Shared, except: u32) void {
    for (self.remotes, 0..) |*remote, index| {
        if (index == except) continue;
        if (remote.dozing.load(.seq_cst)) remote.parker.unpark();
    }
}

/// The last searcher going to sleep re-checks every queue once more. True if it unparked a
/// worker.
pub fn notifyIfWorkPending(self: *Shared) bool {
    for (self.remotes) |*remote| {
        if (!remote.local.isEmpty()) return self.notifyParked();
    }
    if (!self.inject.isEmpty()) return self.notifyParked();
    return false;
}

/// A task spawned or woken on a thread that is not one of this runtime's workers: into the
/// inject queue, then wake a worker if nobody is searching (counted in the external set).
pub fn submitRemote(self: *Shared, task: *Header) void {
    assert(task.load() & Header.scheduled != 0);
    self.inject.push(task);
    const recorder = self.externalRecorder();
    recorder.count(.inject_pushes, 1);
    if (self.notifyParked()) recorder.count(.unparks_issued, 1);
}

/// The timer driver's earliest deadline moved earlier: make a sleeping worker re-arm.
fn kickTimer(ctx: *anyopaque) void {
    const self: *Shared = @ptrCast(@alignCast(ctx));
    if (self.kickOwnerOrSleeper()) self.externalRecorder().count(.unparks_issued, 1);
}

/// Makes the driver owner re-compute its timeout (or, with no owner, a sleeper, which then
/// claims ownership), without changing anyone's registration. True if it unparked one.
fn kickOwnerOrSleeper(self: *Shared) bool {
    const owner = self.driver.owner.load(.seq_cst);
    if (owner != Driver.no_owner) {
        assert(owner < self.remotes.len);
        self.remotes[owner].parker.unpark();
    } else if (self.idle.anySleeper()) |index| {
        self.remotes[index].parker.unpark();
    } else return false;
    return true;
}

/// A task's output (or Cancelled) is stored by the thread holding `running`: complete it and
/// drop the poller's and the owned list's references.
pub fn finishTask(self: *Shared, task: *Header) void {
    self.completeTask(task);
    task.refDec(2);
}

/// The first half of `finishTask`: completes the task and unlinks it from the owned list, but
/// keeps its references (the poller's and the owned list's) for the caller to drop with
/// `refDec(2)` — a fiber that completes on its own stack keeps its memory until it is off it
/// (`Worker.takeHandoff`).
pub fn completeTask(self: *Shared, task: *Header) void {
    hook.reached(.task_before_complete);
    const before = task.transitionToComplete();
    assert(before & Header.running != 0);
    assert(Header.refCount(before) >= 2); // The poller's and the owned list's, dropped later.
    self.owned.remove(task);
}

/// Shutdown: a task taken from a queue that nobody will poll — cancel it and complete it.
pub fn cancelQueuedTask(self: *Shared, task: *Header) void {
    assert(task.load() & Header.scheduled != 0);
    assert(self.isShuttingDown());
    switch (task.transitionToRunning()) {
        .cancel, .poll => {
            const done = task.vtable.cancel(task);
            assert(done); // Off a worker a cancellation always finishes (it may block here).
        },
    }
    self.finishTask(task);
}

/// Shutdown: a task already unlinked from `owned` (by `popAny`). If it is in no queue, take
/// it as a poller would and cancel it; if it is queued (woken meanwhile), the queue pass
/// cancels it. True if it was cancelled here.
pub fn cancelIdleTask(self: *Shared, task: *Header) bool {
    assert(self.isShuttingDown());
    if (!task.transitionIdleToRunning()) return false;
    const done = task.vtable.cancel(task);
    assert(done); // Off a worker a cancellation always finishes.
    const before = task.transitionToComplete();
    assert(before & Header.running != 0);
    task.refDec(2); // The canceller's and the owned list's (already unlinked by popAny).
    return true;
}

test "fields written by every spawn, wake or park own their cache lines" {
    const line = std.atomic.cache_line;
    const written = [_][]const u8{ "inject", "idle", "next_task_id", "driver", "watch", "driver_watch", "external_metrics", "external_waits" };
    const Span = struct { first: usize, last: usize };
    const span = struct {
        fn of(comptime name: []const u8) Span {
            const offset = @offsetOf(Shared, name);
            const size = @sizeOf(@FieldType(Shared, name));
            return .{ .first = offset / line, .last = (offset + size - 1) / line };
        }
    }.of;
    inline for (written) |hot| {
        const a = span(hot);
        inline for (@typeInfo(Shared).@"struct".fields) |field| {
            if (comptime std.mem.eql(u8, field.name, hot)) continue;
            const b = span(field.name);
            const overlap = a.first <= b.last and b.first <= a.last;
            if (overlap) std.debug.print("{s} shares a cache line with {s}\n", .{ hot, field.name });
            try std.testing.expect(!overlap);
        }
    }
}

test "the deferral watch stays armed for a look a bound later after a look that found nothing" {
    const Probe = struct {
        fn submit(_: *anyopaque, _: *Header, _: bool) void {
            unreachable; // Nothing is queued here.
        }
    };
    var runtime_stand_in: u8 = 0;
    var shared: Shared = undefined;
    try shared.init(std.testing.allocator, .{ .workers = 2 }, &runtime_stand_in, Probe.submit);
    defer shared.deinit();
    const token: u32 = 7 | (1 << 31);
    shared.publishDeferred(0, token);
    try std.testing.expect(shared.watch.armed.load(.seq_cst));
    // The deferring poll returned and withdrew it before the owner's first look (kicked at
    // once): the watch stays armed, the owner sleeping at most a bound.
    shared.remotes[0].deferred.store(0, .monotonic);
    try std.testing.expect(!shared.watchDeferred());
    try std.testing.expect(shared.watch.armed.load(.seq_cst));
    try std.testing.expectEqual(deferred_bound_ns, shared.ownerTimeoutNs().?);
    // A deferral seen at a look starts the count again...
    shared.remotes[1].deferred.store(token, .seq_cst);
    try std.testing.expect(!shared.watchDeferred());
    shared.remotes[1].deferred.store(0, .monotonic);
    try std.testing.expect(!shared.watchDeferred());
    try std.testing.expect(shared.watch.armed.load(.seq_cst));
    // ...and the second look in a row without one disarms: the owner sleeps unbounded again.
    try std.testing.expect(!shared.watchDeferred());
    try std.testing.expect(!shared.watch.armed.load(.seq_cst));
    try std.testing.expectEqual(@as(?u64, null), shared.ownerTimeoutNs());
}
