//! The part of one runtime's scheduler that every worker, waker and spawner shares (Tokio's
//! `multi_thread::Shared` + `Handle`): the stealable half of each worker (`Remote`: its run
//! queue and its parker), the inject queue, idle tracking, the owned-task list, the timer
//! driver, and the operations on them that any thread may call — waking a parked worker,
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
//! ## Waking workers
//!
//! `notifyParked` follows the idle protocol of `Idle.zig`: the caller has published work
//! (seq_cst, see InjectQueue/LocalQueue), then asks `Idle` whether a sleeper must be woken.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const Options = @import("../Options.zig");
const context = @import("../context.zig");
const Header = @import("../task/Header.zig");
const Parker = @import("../Parker.zig");
const Driver = @import("../time/Driver.zig");
const LocalQueue = @import("LocalQueue.zig");
const InjectQueue = @import("InjectQueue.zig");
const Idle = @import("Idle.zig");
const OwnedTasks = @import("OwnedTasks.zig");

const Shared = @This();

/// What other threads may touch of worker `i`: `remotes[i]`.
pub const Remote = struct {
    /// Owner pushes and pops; other workers steal (LocalQueue's protocol).
    local: LocalQueue = .{},
    /// The worker thread parks on it; anyone unparks it.
    parker: Parker = .{},
};

allocator: Allocator,
options: Options,
remotes: []Remote,
inject: InjectQueue = .{},
idle: Idle,
owned: OwnedTasks,
driver: Driver,
/// Where this runtime's tasks go when woken or spawned (`Worker.submit`, context = self).
task_scheduler: Header.Scheduler,
next_task_id: std.atomic.Value(u64) = .init(1),
/// Set once by shutdown (release); workers poll it (acquire) between tasks.
shutting_down: std.atomic.Value(bool) = .init(false),
/// The owning `Runtime`, type-erased, for the thread-local context of its threads.
runtime: *anyopaque,

/// Initialises in place (the timer driver's kick points back at `self`). `submit` is the
/// routing function of this runtime's tasks (`Worker.submit`).
pub fn init(
    self: *Shared,
    allocator: Allocator,
    options: Options,
    runtime: *anyopaque,
    submit: *const fn (ctx: *anyopaque, task: *Header, yielded: bool) void,
) Allocator.Error!void {
    assert(options.workers >= 1 and options.workers <= Idle.workers_max);
    assert(options.global_queue_interval > 0 and options.event_interval > 0);
    const remotes = try allocator.alloc(Remote, options.workers);
    errdefer allocator.free(remotes);
    @memset(remotes, .{});
    const shard_count = std.math.ceilPowerOfTwo(usize, 4 * options.workers) catch unreachable;
    const owned = try OwnedTasks.init(allocator, shard_count);
    self.* = .{
        .allocator = allocator,
        .options = options,
        .remotes = remotes,
        .idle = Idle.init(options.workers),
        .owned = owned,
        .driver = Driver.init(.{ .context = self, .function = kickTimer }),
        .task_scheduler = .{ .context = self, .submit = submit },
        .runtime = runtime,
    };
    assert(self.remotes.len == options.workers);
}

/// After every thread of the scheduler stopped and every task completed.
pub fn deinit(self: *Shared) void {
    assert(self.inject.isEmpty());
    for (self.remotes) |*remote| assert(remote.local.isEmpty());
    self.owned.deinit(self.allocator);
    self.allocator.free(self.remotes);
    self.* = undefined;
}

pub fn isShuttingDown(self: *const Shared) bool {
    return self.shutting_down.load(.acquire);
}

/// What a thread of this runtime puts in its thread-local context.
pub fn handles(self: *Shared) context.Handles {
    return .{ .runtime = self.runtime, .driver = &self.driver };
}

pub fn nextTaskId(self: *Shared) u64 {
    // Monotonic: ids only need to be unique (they select an owned-list shard).
    return self.next_task_id.fetchAdd(1, .monotonic);
}

/// Wakes an idle worker if work is available that nobody is looking for.
pub fn notifyParked(self: *Shared) void {
    const index = self.idle.workerToNotify() orelse return;
    assert(index < self.remotes.len);
    self.remotes[index].parker.unpark();
}

/// The last searcher going to sleep re-checks every queue once more.
pub fn notifyIfWorkPending(self: *Shared) void {
    for (self.remotes) |*remote| {
        if (!remote.local.isEmpty()) {
            self.notifyParked();
            return;
        }
    }
    if (!self.inject.isEmpty()) self.notifyParked();
}

/// The timer driver's earliest deadline moved earlier: make a sleeping worker re-arm.
fn kickTimer(ctx: *anyopaque) void {
    const self: *Shared = @ptrCast(@alignCast(ctx));
    const owner = self.driver.owner.load(.seq_cst);
    if (owner != Driver.no_owner) {
        assert(owner < self.remotes.len);
        self.remotes[owner].parker.unpark();
    } else if (self.idle.anySleeper()) |index| {
        self.remotes[index].parker.unpark();
    }
}

/// A task's output (or Cancelled) is stored by the thread holding `running`: complete it and
/// drop the poller's and the owned list's references.
pub fn finishTask(self: *Shared, task: *Header) void {
    const before = task.transitionToComplete();
    assert(before & Header.running != 0);
    self.owned.remove(task);
    task.refDec(2);
}

/// Shutdown: a task taken from a queue that nobody will poll — cancel it and complete it.
pub fn cancelQueuedTask(self: *Shared, task: *Header) void {
    assert(task.load() & Header.scheduled != 0);
    switch (task.transitionToRunning()) {
        .cancel, .poll => task.vtable.cancel(task),
    }
    self.finishTask(task);
}

/// Shutdown: a task already unlinked from `owned` (by `popAny`). If it is in no queue, take
/// it as a poller would and cancel it; if it is queued (woken meanwhile), the queue pass
/// cancels it. True if it was cancelled here.
pub fn cancelIdleTask(self: *Shared, task: *Header) bool {
    assert(self.isShuttingDown());
    if (!task.transitionIdleToRunning()) return false;
    task.vtable.cancel(task);
    const before = task.transitionToComplete();
    assert(before & Header.running != 0);
    task.refDec(2); // The canceller's and the owned list's (already unlinked by popAny).
    return true;
}
