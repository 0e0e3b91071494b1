//! The runtime's public API and lifetime: `init`, `deinit`, `blockOn`, `spawn`,
//! `spawnBlocking`. It owns a multi-threaded `Scheduler` (runtime/src/scheduler/: workers,
//! queues, parking, routing and completion of tasks, the timer driver) and a `BlockingPool`.
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
//! In this order (Tokio's: the scheduler shuts down before the blocking pool is waited for):
//!
//! 0. Every fiber is asked for std.Io cancellation (`error.Canceled` at its next cancellation
//!    point, so its `defer`s run and what it holds — an `Io.Mutex`, a socket — is let go), and
//!    `deinit` waits, with everything still running, until no fiber is left or
//!    `Options.shutdown_grace_ns` (500 ms) passed. The fibers left after that are killed in
//!    step 4 without running their `defer`s (runtime/docs/fibers.md, "Cancellation and
//!    shutdown").
//! 1. The workers stop after their current poll and are joined.
//! 2. The owned-task list closes: spawning fails with `error.Shutdown` from now on.
//! 3. The timer driver shuts down: every armed timer fires now and later registrations expire
//!    at once — workers were the only threads firing timers, and a blocking function may be
//!    waiting on one (`rt.blockOn(sleep(...))` from `spawnBlocking`). The I/O driver shuts
//!    down likewise: sockets can no longer be created, and every I/O operation waiting now or
//!    later ends with `error.RuntimeShutdown`.
//! 4. Every task still queued or idle is cancelled (its future's `cancel` unlinks its waiters)
//!    and completed with `error.Cancelled`, repeatedly, since a cancellation may wake another
//!    task. A blocking function waiting on a JoinHandle or on a channel that a task fed now
//!    sees Cancelled (or Closed, when the cancelled task released its handles).
//! 5. The blocking pool stops starting functions and joins the threads that run one.
//! 6. The functions that never started are cancelled, and step 4 runs once more for whatever
//!    the finished functions woke.
//! 7. Threads that are not workers and were waiting in `blockOn` or an `ampere.Io` call were
//!    woken by the steps above; `deinit` waits until each has left the runtime's code (it
//!    panics, saying so, if one is still inside after `shutdown_grace_ns`: it waits where
//!    nothing can end its wait, and freeing the runtime under it would be a use after free).
//!
//! Tasks whose JoinHandle is still held are freed when the handle is awaited or detached
//! (after `deinit` that still works: it touches only the task, which remembers its allocator).
//! At the end the I/O driver closes and frees every socket still open (one a cancelled
//! future did not close is not leaked). A socket handle held past `deinit` fails every
//! operation with `RuntimeShutdown`, and its `close` does nothing (io/Driver.zig, "Handles that
//! outlive the driver").

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const future = @import("future.zig");
const context = @import("context.zig");
const Cell = @import("task/cell.zig").Cell;
const JoinHandle = @import("task/join_handle.zig").JoinHandle;
const from_fn = @import("task/from_fn.zig");
const Scheduler = @import("scheduler/Scheduler.zig");
const Worker = @import("scheduler/Worker.zig");
const BlockingPool = @import("blocking/BlockingPool.zig");
const block_on = @import("block_on.zig");
const SharedParker = @import("SharedParker.zig");
const Fibers = @import("fiber/Fibers.zig");
const fiber_task = @import("fiber/task.zig");
const AmpereIo = @import("Io.zig");
const spawn_blocking = @import("blocking/spawn.zig");
const hook = @import("hook.zig");
const os = @import("os.zig");

const Runtime = @This();

pub const Options = @import("Options.zig");

pub const SpawnError = Allocator.Error || error{Shutdown};
/// Event counts of the scheduler (see `metrics`).
pub const Metrics = @import("scheduler/Metrics.zig");
pub const SpawnBlockingError = SpawnError || error{ThreadSpawn};

allocator: Allocator,
scheduler: Scheduler,
blocking: BlockingPool,
/// The parkers of `blockOn` threads (reference-counted: see `SharedParker`).
parkers: *SharedParker.Pool,
/// Fiber stacks (`spawnFiber`; runtime/docs/fibers.md).
fibers: Fibers,
/// The std.Io implementation (`io()`).
std_io: *AmpereIo.State,

pub fn init(allocator: Allocator, options: Options) !*Runtime {
    const self = try allocator.create(Runtime);
    errdefer allocator.destroy(self);
    self.allocator = allocator;
    self.fibers = Fibers.init(allocator, .{
        .stack_bytes = options.fiber_stack_bytes,
        .guard_bytes = options.fiber_guard_bytes,
        .stacks_cached = options.fiber_stacks_cached,
    });
    errdefer self.fibers.deinit();
    // Before the workers start: each has a share of the stack pool (Stack.zig, "Worker caches").
    try self.fibers.stacks.initLocals(allocator, options.workers);
    try self.scheduler.init(allocator, options, self);
    errdefer self.scheduler.deinit();
    self.blocking = try BlockingPool.init(allocator, &self.scheduler.shared, options.max_blocking_threads, options.blocking_keep_alive_ns);
    errdefer self.blocking.deinit(allocator);
    // One parker up front: a single thread calling `blockOn` never allocates in `blockOn`.
    self.parkers = try SharedParker.Pool.create(allocator, 1);
    errdefer self.parkers.close();
    self.std_io = try AmpereIo.State.create(.{
        .allocator = allocator,
        .shared = &self.scheduler.shared,
        .fibers = &self.fibers,
        .parkers = self.parkers,
        .blocking = &self.blocking,
        .vtable = &AmpereIo.vtable,
    }, .{ .environ = options.environ });
    errdefer self.std_io.destroy(allocator);
    try self.scheduler.start();
    return self;
}

pub fn deinit(self: *Runtime) void {
    assert(!Scheduler.onWorkerThread()); // Not from inside a task: it would join itself.
    const shared = &self.scheduler.shared;
    self.letFibersUnwind(); // 0
    hook.reached(.shutdown_step);
    self.scheduler.stopWorkers(); // 1
    hook.reached(.shutdown_step);
    shared.owned.close(); // 2
    shared.driver.shutdown(); // 3
    shared.io.shutdown();
    hook.reached(.shutdown_step);
    self.scheduler.cancelAllTasks(); // 4
    hook.reached(.shutdown_step);
    self.blocking.shutdown(); // 5
    while (self.blocking.popQueued()) |task| shared.cancelQueuedTask(task); // 6
    self.scheduler.cancelAllTasks();
    assert(shared.owned.count() == 0);
    self.waitExternalWaits(); // 7

    const allocator = self.allocator;
    self.parkers.close(); // Parkers still held by waker clones go when their last clone does.
    self.std_io.destroy(allocator);
    self.blocking.deinit(allocator);
    self.scheduler.deinit();
    self.fibers.deinit(); // Every fiber finished or was killed: every stack is back.
    allocator.destroy(self);
}

/// Shutdown step 0: asks every fiber for std.Io cancellation (`fiber_task.cancelAll`) and
/// waits, with the workers still running, until none is alive or `shutdown_grace_ns` passed.
/// The fibers left are killed by step 4.
fn letFibersUnwind(self: *Runtime) void {
    const shared = &self.scheduler.shared;
    fiber_task.cancelAll(shared, &self.fibers);
    const grace_ns = shared.options.shutdown_grace_ns;
    const start_ns = os.clockNs(.MONOTONIC);
    var pause_ns: u64 = 10 * std.time.ns_per_us;
    // A fiber holds its stack (or its reservation) from its spawn until it is done.
    while (self.fibers.stacks.inUse() > 0) {
        if (os.clockNs(.MONOTONIC) -| start_ns >= grace_ns) break;
        os.sleepNs(pause_ns);
        pause_ns = @min(2 * pause_ns, std.time.ns_per_ms);
    }
}

/// Shutdown step 7: threads that are not workers and were waiting in `blockOn` or an
/// `ampere.Io` call when `deinit` began were woken by the steps before (every task is complete,
/// every timer fired, every I/O operation ended); wait until each has left the runtime's code.
/// A thread still inside after `shutdown_grace_ns` waits where nothing of the runtime can wake
/// it any more (a std.Io futex word only a killed fiber would have changed): freeing the
/// runtime under it would be a use after free, so `deinit` panics, saying so.
fn waitExternalWaits(self: *Runtime) void {
    const shared = &self.scheduler.shared;
    const start_ns = os.clockNs(.MONOTONIC);
    var pause_ns: u64 = 10 * std.time.ns_per_us;
    // Acquire: pairs with each thread's release decrement, its last access.
    while (shared.external_waits.count.load(.acquire) > 0) {
        if (os.clockNs(.MONOTONIC) -| start_ns >= shared.options.shutdown_grace_ns) {
            std.debug.panic("Runtime.deinit: {d} thread(s) still waiting in Runtime.blockOn or an ampere.Io call that nothing can end any more (a std.Io lock or futex word held by a fiber that shutdown killed?); the runtime cannot be freed under them", .{shared.external_waits.count.load(.acquire)});
        }
        os.sleepNs(pause_ns);
        pause_ns = @min(2 * pause_ns, std.time.ns_per_ms);
    }
}

pub fn isShuttingDown(self: *const Runtime) bool {
    return self.scheduler.shared.isShuttingDown();
}

/// Runs `f` on the calling thread until it completes and returns its output, while the
/// workers run spawned tasks. `ampere.spawn` and timers inside `f` use this runtime. Parks on
/// a reference-counted parker of the runtime's pool, which allocates (through the runtime's
/// allocator) only when more threads are in `blockOn` at once than ever before (see
/// `SharedParker`).
pub fn blockOn(self: *Runtime, f: anytype) future.OutputOf(@TypeOf(f)) {
    assert(!Scheduler.onWorkerThread()); // blockOn inside a task would block a worker.
    const shared = &self.scheduler.shared;
    shared.enterExternalWait();
    defer shared.leaveExternalWait(); // Last: `deinit` may free the runtime after it.
    const saved = context.enter(shared.handles());
    defer saved.restore();
    var pinned = f;
    return block_on.blockOnPool(self.parkers, &pinned, shared.options.spin_before_park_ns, shared.externalRecorder());
}

/// Spawns `f` as a task; returns its JoinHandle.
pub fn spawn(self: *Runtime, f: anytype) SpawnError!JoinHandle(future.OutputOf(@TypeOf(f))) {
    const F = @TypeOf(f);
    const shared = &self.scheduler.shared;
    const cell = try Cell(F).create(self.allocator, f, &shared.task_scheduler, Worker.nextTaskId(shared));
    Worker.insertSpawned(shared, &cell.header) catch |err| {
        cell.destroyUnsubmitted();
        return err;
    };
    Worker.submit(shared, &cell.header, false);
    return .{ .raw = &cell.header };
}

/// The `std.Io` of this runtime (`ampere.Io`, runtime/docs/fibers.md): its async and
/// concurrent tasks are fibers, and its waits suspend the calling fiber. Valid until `deinit`.
pub fn io(self: *Runtime) std.Io {
    return self.std_io.io();
}

pub const SpawnFiberError = fiber_task.SpawnError;

/// Spawns `function(args...)` as a fiber: a task with a stack of its own, scheduled like any
/// task, whose code may wait on any future with `ampere.fiber.await` (and on anything std.Io
/// offers, through `io()`). Returns an ordinary JoinHandle. Fails with `OutOfMemory` when no
/// stack can be mapped (runtime/docs/fibers.md).
pub fn spawnFiber(
    self: *Runtime,
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) SpawnFiberError!JoinHandle(ReturnOf(function)) {
    return fiber_task.spawn(&self.scheduler.shared, &self.fibers, function, args);
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
    return spawn_blocking.spawn(self.allocator, &self.scheduler.shared, &self.blocking, function, args);
}

/// A snapshot of the scheduler's event counts: per worker, the external set (events on other
/// threads) and totals. Callable from any thread at any time; see `scheduler/Metrics.zig` for
/// what each count means and how consistent a snapshot taken while workers run is.
pub fn metrics(self: *Runtime) Metrics.Snapshot {
    return self.scheduler.metrics();
}

/// The runtime the calling thread is in (a worker, `blockOn` or blocking thread), if any.
pub fn current() ?*Runtime {
    const erased = context.runtime() orelse return null;
    return @ptrCast(@alignCast(erased));
}
