//! The multi-threaded scheduler of one runtime: its shared state (`Shared`), its workers and
//! their threads — started by `start`, stopped by `stopWorkers` — and the cancellation of
//! every task left when it shuts down.
//!
//! ## Shutdown (driven by `Runtime.deinit`, see runtime/README.md)
//!
//! `stopWorkers` sets `shutting_down` (release), unparks every worker and joins them; each
//! worker finishes its current poll and moves its LIFO task to its local queue before it
//! exits. From then on no thread polls this runtime's tasks, and `cancelAllTasks` takes every
//! task still queued or idle, cancels it (its future's `cancel` unlinks its waiters) and
//! completes it with `error.Cancelled`. A cancellation may wake another task, so it repeats
//! until a pass finds nothing. It may run while blocking-pool threads still run functions that
//! wake tasks: such a wake finds the task idle (and queues it in the inject queue, which the
//! next pass drains), running (being cancelled here: `notified` is ignored by completion) or
//! complete (nothing happens) — every claim of a task is a compare-and-swap on its state word.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const Options = @import("../Options.zig");
const Header = @import("../task/Header.zig");
const Shared = @import("Shared.zig");
const TaskBlocks = @import("TaskBlocks.zig");
const Worker = @import("Worker.zig");
const Metrics = @import("Metrics.zig");

const Scheduler = @This();

shared: Shared,
workers: []Worker,
threads: []std.Thread,
threads_started: u32 = 0,

/// Initialises in place; no thread runs until `start`.
pub fn init(self: *Scheduler, allocator: Allocator, options: Options, runtime: *anyopaque) Shared.InitError!void {
    const workers = try allocator.alloc(Worker, options.workers);
    errdefer allocator.free(workers);
    const threads = try allocator.alloc(std.Thread, options.workers);
    errdefer allocator.free(threads);
    self.* = .{ .shared = undefined, .workers = workers, .threads = threads };
    try self.shared.init(allocator, options, runtime, Worker.submit);
    for (workers, 0..) |*worker, index| worker.* = Worker.init(&self.shared, @intCast(index));
    assert(self.workers.len == self.shared.remotes.len);
}

/// Starts one thread per worker. On failure the threads already started are stopped.
pub fn start(self: *Scheduler) std.Thread.SpawnError!void {
    assert(self.threads_started == 0);
    errdefer self.stopWorkers();
    while (self.threads_started < self.workers.len) : (self.threads_started += 1) {
        const worker = &self.workers[self.threads_started];
        self.threads[self.threads_started] = try std.Thread.spawn(.{}, Worker.run, .{worker});
    }
    assert(self.threads_started == self.workers.len);
}

/// Stops and joins every worker thread (each finishes its current poll first).
pub fn stopWorkers(self: *Scheduler) void {
    // Release: pairs with the workers' acquire load in their loop.
    self.shared.shutting_down.store(true, .release);
    for (self.shared.remotes) |*remote| remote.parker.unpark();
    for (self.threads[0..self.threads_started]) |thread| thread.join();
    self.threads_started = 0;
    assert(self.shared.idle.spinningWorkers() == 0); // Nobody left a spin unfinished.
}

/// Shutdown, after `stopWorkers`: cancels queued tasks, then idle ones, until none is left.
pub fn cancelAllTasks(self: *Scheduler) void {
    assert(self.threads_started == 0);
    const shared = &self.shared;
    assert(shared.isShuttingDown());
    while (true) {
        var progress = false;
        while (self.popQueuedTask()) |task| {
            progress = true;
            shared.cancelQueuedTask(task);
        }
        if (shared.owned.popAny()) |task| {
            progress = true;
            _ = shared.cancelIdleTask(task);
        }
        if (!progress) break;
    }
}

/// With the workers stopped, this thread stands in for their owners' pops.
fn popQueuedTask(self: *Scheduler) ?*Header {
    for (self.workers) |*worker| {
        assert(worker.lifo == null); // Moved to the local queue when the worker stopped.
        if (worker.local().pop()) |task| return task;
    }
    return self.shared.inject.pop();
}

/// Every worker's counts and the external set (relaxed loads; see `Metrics`).
pub fn metrics(self: *Scheduler) Metrics.Snapshot {
    assert(self.workers.len <= Metrics.Snapshot.workers_max);
    var snapshot = Metrics.Snapshot{ .worker_count = @intCast(self.workers.len) };
    for (self.workers, snapshot.per_worker[0..self.workers.len]) |*worker, *counts| {
        counts.* = worker.metrics.snapshot();
    }
    snapshot.external = self.shared.external_metrics.snapshot();
    return snapshot;
}

/// Whether the calling thread is a worker of any runtime (`blockOn` and `deinit` must not be
/// called from one: they would block a worker).
pub fn onWorkerThread() bool {
    return Worker.current() != null;
}

pub fn deinit(self: *Scheduler) void {
    assert(self.threads_started == 0);
    assert(self.shared.owned.count() == 0);
    const allocator = self.shared.allocator;
    // The workers have exited: their block caches are nobody's now.
    for (self.workers) |*worker| worker.task_blocks.deinit(allocator);
    for (self.shared.remotes) |*remote| TaskBlocks.drainReturned(&remote.blocks_returned, allocator);
    self.shared.deinit();
    allocator.free(self.threads);
    allocator.free(self.workers);
    self.* = undefined;
}
