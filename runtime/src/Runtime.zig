//! The multi-threaded runtime: workers, the inject queue, idle tracking, the owned-task list,
//! the timer driver and the blocking pool, and the public API over them (`init`, `deinit`,
//! `blockOn`, `spawn`, `spawnBlocking`).
//!
//! ## Life of a task
//!
//! 1. `spawn` allocates one `Cell` (header + future), state `scheduled | join_interest`, three
//!    references (owned list, queue, JoinHandle), links it into `owned`, and submits it: to the
//!    LIFO slot of the current worker when called on one of this runtime's workers, otherwise
//!    to the inject queue followed by a wake-up of an idle worker.
//! 2. A worker takes it (`scheduled` -> `running`) and polls it with a waker that points at the
//!    header. Pending: `running` -> idle (dropping the queue reference), or straight back into
//!    the queue if it was woken during the poll (`notified`).
//! 3. A wake of an idle task sets `scheduled` and submits it again (step 1's routing).
//! 4. Ready: the output replaces the future, `complete` is set, the JoinHandle's waker (if it
//!    registered one) is woken, the task leaves `owned`, and the poller's and the list's
//!    references are dropped. The JoinHandle takes the output and drops the last reference;
//!    the cell is freed.
//!
//! ## Shutdown (`deinit`)
//!
//! Workers stop after their current poll and are joined; the blocking pool finishes running
//! functions and is joined; `owned` is closed to new tasks. Then, with no other thread
//! running tasks, every task still queued or idle is cancelled (its future's `cancel` unlinks
//! its waiters) and completed with `error.Cancelled`; cancellations may wake other tasks, so
//! this repeats until no task is left. Tasks whose JoinHandle is still held are freed when
//! the handle is awaited or detached (after `deinit` that still works: it touches only the
//! task, which remembers its allocator).

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const future = @import("future.zig");
const context = @import("context.zig");
const Header = @import("task/Header.zig");
const Cell = @import("task/cell.zig").Cell;
const JoinHandle = @import("task/join_handle.zig").JoinHandle;
const from_fn = @import("task/from_fn.zig");
const InjectQueue = @import("scheduler/InjectQueue.zig");
const Idle = @import("scheduler/Idle.zig");
const OwnedTasks = @import("scheduler/OwnedTasks.zig");
const Worker = @import("scheduler/Worker.zig");
const Driver = @import("time/Driver.zig");
const BlockingPool = @import("blocking/BlockingPool.zig");
const block_on = @import("block_on.zig");
const SharedParker = @import("SharedParker.zig");

const Runtime = @This();

pub const Options = struct {
    /// Worker threads running tasks (1..64).
    workers: u32 = 4,
    /// Upper bound of blocking-pool threads.
    max_blocking_threads: u32 = 512,
    /// An idle blocking thread exits after this long without work.
    blocking_keep_alive_ns: u64 = 10 * std.time.ns_per_s,
    /// A worker checks the inject queue first every this many ticks (Tokio's current-thread
    /// scheduler: 31; its multi-thread scheduler self-tunes between 2 and 127, seeded at 61).
    global_queue_interval: u32 = 31,
    /// A busy worker checks for due timers every this many ticks (Tokio: 61).
    event_interval: u32 = 61,
    /// How long an idle worker (and a `blockOn` thread waiting for its future) polls for a
    /// wake-up before sleeping on its futex. Waking a sleeping thread costs 2–80 µs (far more
    /// on a VM whose vCPU halted); a wake-up within this window costs a memory write. Tokio
    /// sleeps at once. 0 disables spinning; an idle runtime stops using CPU after this long.
    spin_before_park_ns: u64 = 20 * std.time.ns_per_us,
};

pub const SpawnError = Allocator.Error || error{Shutdown};
pub const SpawnBlockingError = SpawnError || error{ThreadSpawn};

/// The worker type, exposed for the runtime's own tests (hooks, worker fields).
pub const WorkerForTests = Worker;

allocator: Allocator,
options: Options,
workers: []Worker,
threads: []std.Thread,
inject: InjectQueue = .{},
idle: Idle,
owned: OwnedTasks,
driver: Driver,
blocking: BlockingPool,
/// The parkers of `blockOn` threads (reference-counted: see `SharedParker`).
parkers: *SharedParker.Pool,
scheduler: Header.Scheduler,
next_task_id: std.atomic.Value(u64) = .init(1),
shutting_down: std.atomic.Value(bool) = .init(false),

pub fn init(allocator: Allocator, options: Options) !*Runtime {
    assert(options.workers >= 1 and options.workers <= Idle.workers_max);
    assert(options.global_queue_interval > 0 and options.event_interval > 0);
    const self = try allocator.create(Runtime);
    errdefer allocator.destroy(self);
    const workers = try allocator.alloc(Worker, options.workers);
    errdefer allocator.free(workers);
    const threads = try allocator.alloc(std.Thread, options.workers);
    errdefer allocator.free(threads);
    var owned = try OwnedTasks.init(allocator, try std.math.ceilPowerOfTwo(usize, 4 * options.workers));
    errdefer owned.deinit(allocator);
    var blocking = try BlockingPool.init(allocator, self, options.max_blocking_threads, options.blocking_keep_alive_ns);
    errdefer blocking.deinit(allocator);
    // One parker up front: a single thread calling `blockOn` never allocates in `blockOn`.
    const parkers = try SharedParker.Pool.create(allocator, 1);
    errdefer parkers.close();

    self.* = .{
        .allocator = allocator,
        .options = options,
        .workers = workers,
        .threads = threads,
        .idle = Idle.init(options.workers),
        .owned = owned,
        .driver = Driver.init(.{ .context = self, .function = kickTimer }),
        .blocking = blocking,
        .parkers = parkers,
        .scheduler = .{ .context = self, .submit = submit },
    };
    for (workers, 0..) |*worker, index| worker.* = Worker.init(self, @intCast(index));

    var started: usize = 0;
    errdefer {
        self.shutting_down.store(true, .release);
        for (workers[0..started]) |*worker| worker.parker.unpark();
        for (threads[0..started]) |thread| thread.join();
    }
    while (started < workers.len) : (started += 1) {
        threads[started] = try std.Thread.spawn(.{}, Worker.run, .{&workers[started]});
    }
    return self;
}

pub fn deinit(self: *Runtime) void {
    assert(context.worker() == null); // Not from inside a task of this runtime.
    self.shutting_down.store(true, .release);
    for (self.workers) |*worker| worker.parker.unpark();
    for (self.threads) |thread| thread.join();
    self.blocking.shutdown();
    self.owned.close();
    self.cancelAllTasks();

    const allocator = self.allocator;
    self.parkers.close(); // Parkers still held by waker clones go when their last clone does.
    self.blocking.deinit(allocator);
    self.owned.deinit(allocator);
    allocator.free(self.threads);
    allocator.free(self.workers);
    allocator.destroy(self);
}

pub fn isShuttingDown(self: *const Runtime) bool {
    return self.shutting_down.load(.acquire);
}

/// Runs `f` on the calling thread until it completes and returns its output, while the
/// workers run spawned tasks. `ampere.spawn` and timers inside `f` use this runtime. Parks on
/// a reference-counted parker of the runtime's pool: allocates (through the runtime's
/// allocator) only when every parker of the pool is checked out (see `SharedParker`).
pub fn blockOn(self: *Runtime, f: anytype) future.OutputOf(@TypeOf(f)) {
    assert(context.worker() == null); // blockOn inside a task would block a worker.
    const saved = context.enter(self, null);
    defer saved.restore();
    var pinned = f;
    return block_on.blockOnPool(self.parkers, &pinned, self.options.spin_before_park_ns);
}

/// Spawns `f` as a task; returns its JoinHandle.
pub fn spawn(self: *Runtime, f: anytype) SpawnError!JoinHandle(future.OutputOf(@TypeOf(f))) {
    const F = @TypeOf(f);
    const cell = try Cell(F).create(self.allocator, f, &self.scheduler, self.nextTaskId());
    self.owned.insert(&cell.header) catch |err| {
        self.allocator.destroy(cell);
        return err;
    };
    submit(self, &cell.header, false);
    return .{ .raw = &cell.header };
}

/// The return type of a function (for `spawnBlocking`'s JoinHandle).
pub fn ReturnOf(comptime function: anytype) type {
    return @typeInfo(@TypeOf(function)).@"fn".return_type.?;
}

/// Runs `function(args...)` on the blocking pool; returns a JoinHandle of its result.
pub fn spawnBlocking(
    self: *Runtime,
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) SpawnBlockingError!JoinHandle(ReturnOf(function)) {
    const F = from_fn.FromFn(function);
    const cell = try Cell(F).create(self.allocator, .{ .args = args }, &self.blocking.scheduler, self.nextTaskId());
    self.owned.insert(&cell.header) catch |err| {
        self.allocator.destroy(cell);
        return err;
    };
    self.blocking.push(&cell.header) catch |err| {
        self.owned.remove(&cell.header);
        self.allocator.destroy(cell);
        return err;
    };
    return .{ .raw = &cell.header };
}

fn nextTaskId(self: *Runtime) u64 {
    return self.next_task_id.fetchAdd(1, .monotonic);
}

/// Where woken and spawned tasks go (the `Header.Scheduler` of this runtime's tasks).
fn submit(ctx: *anyopaque, task: *Header, yielded: bool) void {
    const self: *Runtime = @ptrCast(@alignCast(ctx));
    if (context.worker()) |worker| {
        if (worker.runtime == self) {
            worker.scheduleLocal(task, yielded);
            return;
        }
    }
    self.inject.push(task);
    self.notifyParked();
}

/// Wakes an idle worker if work is available that nobody is looking for.
pub fn notifyParked(self: *Runtime) void {
    if (self.idle.workerToNotify()) |index| self.workers[index].parker.unpark();
}

/// The last searcher going to sleep re-checks every queue once more.
pub fn notifyIfWorkPending(self: *Runtime) void {
    for (self.workers) |*worker| {
        if (!worker.local.isEmpty()) {
            self.notifyParked();
            return;
        }
    }
    if (!self.inject.isEmpty()) self.notifyParked();
}

/// The timer driver's earliest deadline moved earlier: make a sleeping worker re-arm.
fn kickTimer(ctx: *anyopaque) void {
    const self: *Runtime = @ptrCast(@alignCast(ctx));
    const owner = self.driver.owner.load(.seq_cst);
    if (owner != Driver.no_owner) {
        self.workers[owner].parker.unpark();
    } else if (self.idle.anySleeper()) |index| {
        self.workers[index].parker.unpark();
    }
}

/// A task's output (or Cancelled) is stored: complete it and drop the poller's and the
/// owned list's references.
pub fn finishTask(self: *Runtime, task: *Header) void {
    _ = task.transitionToComplete();
    self.owned.remove(task);
    task.refDec(2);
}

/// Runs one blocking task to completion on the calling (blocking pool) thread.
pub fn runBlockingTask(self: *Runtime, task: *Header) void {
    switch (task.transitionToRunning()) {
        .cancel => task.vtable.cancel(task),
        .poll => {
            const done = task.vtable.poll(task);
            assert(done); // Blocking tasks are function calls: always ready.
        },
    }
    self.finishTask(task);
}

/// Shutdown, with every thread of the runtime stopped: cancel queued tasks, then idle ones,
/// until none is left (a cancellation can wake, and so queue, another task). Threads outside
/// the runtime must not wake its tasks while it is being destroyed.
fn cancelAllTasks(self: *Runtime) void {
    while (true) {
        var progress = false;
        while (self.popQueuedTask()) |task| {
            progress = true;
            // Queued: `scheduled` and still in `owned`.
            switch (task.transitionToRunning()) {
                .cancel, .poll => task.vtable.cancel(task),
            }
            self.finishTask(task);
        }
        if (self.owned.popAny()) |task| {
            progress = true;
            self.cancelIdleTask(task);
        }
        if (!progress) break;
    }
    assert(self.inject.isEmpty());
}

fn popQueuedTask(self: *Runtime) ?*Header {
    for (self.workers) |*worker| {
        if (worker.lifo) |task| {
            worker.lifo = null;
            return task;
        }
        if (worker.local.pop()) |task| return task;
    }
    if (self.inject.pop()) |task| return task;
    return self.blocking.popQueued();
}

/// A task popped from `owned`: if it is in no queue, take it as a poller would and cancel it;
/// if it is queued (woken by an earlier cancellation), the queue pass cancels it.
fn cancelIdleTask(self: *Runtime, task: *Header) void {
    _ = self;
    if (!task.transitionIdleToRunning()) return;
    task.vtable.cancel(task);
    _ = task.transitionToComplete();
    task.refDec(2); // The canceller's and the owned list's (already unlinked by popAny).
}

/// The runtime the calling thread is in (a worker, `blockOn` or blocking thread), if any.
pub fn current() ?*Runtime {
    return context.runtime();
}
