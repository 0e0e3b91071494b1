//! Stress tests of the sync primitives on the runtime (`Runtime` with 4 workers): tasks that
//! wait suspend (their waiter node lives in the task's heap cell) instead of blocking a thread,
//! and more tasks than workers share each primitive, so every wait really goes through the
//! intrusive wait lists and cross-worker wake-ups.
//!
//! Exact invariants as in stress_tests.zig (exact counts, "never more than k inside", one
//! leader per generation, no lost notification), sized by `testing.scaled`: full intensity
//! runs the issue's sizes (contended Mutex 4 x 250,000). Tasks never panic on a violated
//! invariant: they count it in `failures`, checked after the join. A final test gives the
//! runtime a CountingAllocator and checks that, once the tasks are spawned, the steady state
//! of every primitive allocates nothing.

const std = @import("std");
const testing = std.testing;
const Atomic = std.atomic.Value;

const ampere_testing = @import("../testing.zig");
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Runtime = @import("../Runtime.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const JoinError = @import("../task/cell.zig").JoinError;
const combinators = @import("../task/combinators.zig");
const CountingAllocator = @import("../CountingAllocator.zig");
const Semaphore = @import("Semaphore.zig");
const Mutex = @import("Mutex.zig");
const RwLock = @import("RwLock.zig");
const Notify = @import("Notify.zig");
const Barrier = @import("Barrier.zig");
const OnceCell = @import("once_cell.zig").OnceCell;

const workers = 4;

fn check(failures: *Atomic(u32), ok: bool) void {
    // Monotonic: read after the join, which synchronises.
    if (!ok) _ = failures.fetchAdd(1, .monotonic);
}

/// Spawns every task in `tasks` on `rt`, awaits them all from `blockOn`, and fails if any
/// was cancelled. `allocator` holds the handles (allocated before the tasks start).
fn runAll(rt: *Runtime, allocator: std.mem.Allocator, tasks: anytype) !void {
    const Task = std.meta.Elem(@TypeOf(tasks));
    const handles = try allocator.alloc(JoinHandle(void), tasks.len);
    defer allocator.free(handles);
    const results = try allocator.alloc(?(JoinError!void), tasks.len);
    defer allocator.free(results);
    @memset(results, null);
    for (tasks, handles) |task, *handle| handle.* = try rt.spawn(@as(Task, task));
    rt.blockOn(combinators.joinAll(handles, results));
    for (results) |result| try result.?;
}

// ---------------------------------------------------------------------------------------
// Mutex

const MutexShared = struct {
    mutex: Mutex = Mutex.init(),
    /// Plain on purpose: only the lock protects it (lost increments / a TSan report if not).
    counter: u64 = 0,
    inside: Atomic(u32) = .init(0),
    failures: Atomic(u32) = .init(0),
};

const MutexTask = struct {
    pub const Output = void;
    shared: *MutexShared,
    remaining: usize,
    locking: ?Mutex.Lock = null,

    pub fn poll(self: *MutexTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        while (self.remaining > 0) {
            if (future.isNull(&self.locking)) self.locking = shared.mutex.lock();
            var guard = switch (self.locking.?.poll(cx)) {
                .pending => return .pending,
                .ready => |guard| guard,
            };
            self.locking = null;
            check(&shared.failures, shared.inside.fetchAdd(1, .monotonic) == 0);
            shared.counter += 1;
            _ = shared.inside.fetchSub(1, .monotonic);
            guard.unlock();
            self.remaining -= 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *MutexTask) void {
        if (self.locking) |*locking| locking.cancel();
    }
};

test "runtime stress: contended Mutex, 4 tasks on 4 workers, exact count" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const per_task = ampere_testing.scaled(250_000, 25);
    var shared = MutexShared{};
    var tasks: [4]MutexTask = undefined;
    for (&tasks) |*task| task.* = .{ .shared = &shared, .remaining = per_task };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(u64, 4 * per_task), shared.counter);
    var guard = shared.mutex.tryLock() orelse return error.TestMutexStillLocked;
    guard.unlock();
}

// ---------------------------------------------------------------------------------------
// Semaphore

const SemaphoreShared = struct {
    const permits = 2;
    semaphore: Semaphore = Semaphore.init(permits),
    in_use: Atomic(usize) = .init(0),
    failures: Atomic(u32) = .init(0),
};

const SemaphoreTask = struct {
    pub const Output = void;
    shared: *SemaphoreShared,
    remaining: usize,
    acquiring: ?Semaphore.Acquire = null,

    pub fn poll(self: *SemaphoreTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        while (self.remaining > 0) {
            if (future.isNull(&self.acquiring)) self.acquiring = shared.semaphore.acquire(1);
            switch (self.acquiring.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| result catch check(&shared.failures, false),
            }
            self.acquiring = null;
            const now = shared.in_use.fetchAdd(1, .monotonic) + 1;
            check(&shared.failures, now <= SemaphoreShared.permits);
            _ = shared.in_use.fetchSub(1, .monotonic);
            shared.semaphore.release(1);
            self.remaining -= 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *SemaphoreTask) void {
        if (self.acquiring) |*acquiring| acquiring.cancel();
    }
};

test "runtime stress: Semaphore of 2 with 8 tasks never admits more than 2" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const per_task = ampere_testing.scaled(125_000, 25);
    var shared = SemaphoreShared{};
    var tasks: [8]SemaphoreTask = undefined;
    for (&tasks) |*task| task.* = .{ .shared = &shared, .remaining = per_task };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(usize, SemaphoreShared.permits), shared.semaphore.availablePermits());
}

// ---------------------------------------------------------------------------------------
// RwLock

const RwLockShared = struct {
    lock: RwLock = RwLock.init(),
    readers: Atomic(u32) = .init(0),
    writers: Atomic(u32) = .init(0),
    value: u64 = 0,
    failures: Atomic(u32) = .init(0),
};

const RwLockTask = struct {
    pub const Output = void;
    shared: *RwLockShared,
    remaining: usize,
    writer: bool,
    reading: ?RwLock.Read = null,
    writing: ?RwLock.Write = null,

    pub fn poll(self: *RwLockTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        while (self.remaining > 0) {
            if (self.writer) {
                if (future.isNull(&self.writing)) self.writing = shared.lock.write();
                var guard = switch (self.writing.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |guard| guard,
                };
                self.writing = null;
                check(&shared.failures, shared.writers.fetchAdd(1, .monotonic) == 0);
                check(&shared.failures, shared.readers.load(.monotonic) == 0);
                shared.value += 1;
                _ = shared.writers.fetchSub(1, .monotonic);
                guard.unlock();
            } else {
                if (future.isNull(&self.reading)) self.reading = shared.lock.read();
                var guard = switch (self.reading.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |guard| guard,
                };
                self.reading = null;
                _ = shared.readers.fetchAdd(1, .monotonic);
                check(&shared.failures, shared.writers.load(.monotonic) == 0);
                std.mem.doNotOptimizeAway(shared.value);
                _ = shared.readers.fetchSub(1, .monotonic);
                guard.unlock();
            }
            self.remaining -= 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *RwLockTask) void {
        if (self.reading) |*reading| reading.cancel();
        if (self.writing) |*writing| writing.cancel();
    }
};

test "runtime stress: RwLock with 4 readers and 2 writers" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const per_task = ampere_testing.scaled(50_000, 25);
    var shared = RwLockShared{};
    var tasks: [6]RwLockTask = undefined;
    for (&tasks, 0..) |*task, i| task.* = .{ .shared = &shared, .remaining = per_task, .writer = i >= 4 };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(u64, 2 * per_task), shared.value);
}

// ---------------------------------------------------------------------------------------
// Barrier

const BarrierShared = struct {
    const parties = 8; // more tasks than workers: waiters must suspend, not block
    barrier: Barrier = Barrier.init(parties),
    arrivals: []Atomic(u32),
    leaders: []Atomic(u32),
    failures: Atomic(u32) = .init(0),
};

const BarrierTask = struct {
    pub const Output = void;
    shared: *BarrierShared,
    generation: usize = 0,
    waiting: ?Barrier.Wait = null,

    pub fn poll(self: *BarrierTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        while (self.generation < shared.arrivals.len) {
            const g = self.generation;
            if (future.isNull(&self.waiting)) {
                _ = shared.arrivals[g].fetchAdd(1, .monotonic);
                self.waiting = shared.barrier.wait();
            }
            const result = switch (self.waiting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |r| r,
            };
            self.waiting = null;
            check(&shared.failures, shared.arrivals[g].load(.monotonic) == BarrierShared.parties);
            if (result.is_leader) _ = shared.leaders[g].fetchAdd(1, .monotonic);
            self.generation += 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *BarrierTask) void {
        if (self.waiting) |*waiting| waiting.cancel();
    }
};

test "runtime stress: Barrier of 8 tasks on 4 workers, one leader per generation" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const generations = ampere_testing.scaled(10_000, 20);
    const arrivals = try testing.allocator.alloc(Atomic(u32), generations);
    defer testing.allocator.free(arrivals);
    const leaders = try testing.allocator.alloc(Atomic(u32), generations);
    defer testing.allocator.free(leaders);
    @memset(arrivals, .init(0));
    @memset(leaders, .init(0));
    var shared = BarrierShared{ .arrivals = arrivals, .leaders = leaders };
    var tasks: [BarrierShared.parties]BarrierTask = undefined;
    for (&tasks) |*task| task.* = .{ .shared = &shared };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    for (leaders) |*count| try testing.expectEqual(@as(u32, 1), count.load(.monotonic));
}

// ---------------------------------------------------------------------------------------
// Notify

const NotifyShared = struct {
    notify: Notify = .{},
    tokens: Atomic(u64) = .init(0),
    consumed: Atomic(u64) = .init(0),
    done: Atomic(bool) = .init(false),
    total: u64,
    failures: Atomic(u32) = .init(0),

    fn takeToken(self: *NotifyShared) bool {
        var tokens = self.tokens.load(.acquire);
        while (tokens > 0) {
            tokens = self.tokens.cmpxchgWeak(tokens, tokens - 1, .acquire, .acquire) orelse return true;
        }
        return false;
    }
};

/// Producers add a token then `notifyOne`; consumers create `notified()`, check for a token
/// (or the end), then await. A lost notification leaves a consumer asleep with tokens left:
/// the test hangs rather than passes.
const NotifyTask = struct {
    pub const Output = void;
    shared: *NotifyShared,
    produce: u64,
    waiting: ?Notify.Notified = null,

    pub fn poll(self: *NotifyTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        if (self.produce > 0) {
            for (0..self.produce) |_| {
                _ = shared.tokens.fetchAdd(1, .release);
                shared.notify.notifyOne();
            }
            self.produce = 0;
            return .{ .ready = {} };
        }
        while (true) {
            if (future.isNull(&self.waiting)) {
                self.waiting = shared.notify.notified();
                if (shared.takeToken()) {
                    self.waiting = null; // never polled: nothing to cancel
                    const consumed = shared.consumed.fetchAdd(1, .acq_rel) + 1;
                    check(&shared.failures, consumed <= shared.total);
                    if (consumed == shared.total) {
                        shared.done.store(true, .release);
                        shared.notify.notifyWaiters();
                    }
                    continue;
                }
                if (shared.done.load(.acquire)) {
                    self.waiting = null;
                    return .{ .ready = {} };
                }
            }
            if (self.waiting.?.poll(cx) == .pending) return .pending;
            self.waiting = null;
        }
    }

    pub fn cancel(self: *NotifyTask) void {
        if (self.waiting) |*waiting| waiting.cancel();
    }
};

test "runtime stress: Notify tokens between 2 producer and 4 consumer tasks, none lost" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const per_producer = ampere_testing.scaled(100_000, 25);
    var shared = NotifyShared{ .total = 2 * per_producer };
    var tasks: [6]NotifyTask = undefined;
    for (&tasks, 0..) |*task, i| task.* = .{ .shared = &shared, .produce = if (i < 2) per_producer else 0 };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(shared.total, shared.consumed.load(.monotonic));
}

// ---------------------------------------------------------------------------------------
// OnceCell

/// Yields once, then counts its completion (shared with the thread-level stress tests).
const CountingInit = @import("stress_tests.zig").CountingInit;

const Cell = OnceCell(u64);

const OnceCellShared = struct {
    cells: []Cell,
    completions: []Atomic(u32),
    failures: Atomic(u32) = .init(0),
};

const OnceCellTask = struct {
    pub const Output = void;
    shared: *OnceCellShared,
    round: usize = 0,
    op: ?Cell.GetOrInit(CountingInit) = null,

    pub fn poll(self: *OnceCellTask, cx: *Context) Poll(void) {
        const shared = self.shared;
        while (self.round < shared.cells.len) {
            const r = self.round;
            const cell = &shared.cells[r];
            if (future.isNull(&self.op)) self.op = cell.getOrInit(CountingInit{ .value = r, .completions = &shared.completions[r] });
            const value = switch (self.op.?.poll(cx)) {
                .pending => return .pending,
                .ready => |v| v,
            };
            self.op = null;
            check(&shared.failures, value == &cell.value and value.* == r);
            self.round += 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *OnceCellTask) void {
        if (self.op) |*op| op.cancel();
    }
};

test "runtime stress: OnceCell, 8 tasks race getOrInit on each cell, one initializer runs" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    const rounds = ampere_testing.scaled(5_000, 10);
    const cells = try testing.allocator.alloc(Cell, rounds);
    defer testing.allocator.free(cells);
    const completions = try testing.allocator.alloc(Atomic(u32), rounds);
    defer testing.allocator.free(completions);
    @memset(cells, Cell.init());
    @memset(completions, .init(0));
    var shared = OnceCellShared{ .cells = cells, .completions = completions };
    var tasks: [8]OnceCellTask = undefined;
    for (&tasks) |*task| task.* = .{ .shared = &shared };
    try runAll(rt, testing.allocator, &tasks);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    for (completions) |*count| try testing.expectEqual(@as(u32, 1), count.load(.monotonic));
}

// ---------------------------------------------------------------------------------------
// Zero allocations in the steady state, on the runtime

const Gate = struct {
    notify: Notify = .{},
    open: Atomic(bool) = .init(false),
};

const SteadyShared = struct {
    gate: Gate = .{},
    mutex: Mutex = Mutex.init(),
    semaphore: Semaphore = Semaphore.init(2),
    rwlock: RwLock = RwLock.init(),
    notify: Notify = .{},
    barrier: Barrier = Barrier.init(4),
    counter: u64 = 0,
};

/// Waits at the gate (so that spawning is over before the count starts), then runs
/// `remaining` rounds of: lock/unlock, acquire/release, read or write, notifyOne + poll a
/// Notified, barrier wait.
const SteadyTask = struct {
    pub const Output = void;
    shared: *SteadyShared,
    remaining: usize,
    writer: bool,
    step: u8 = 0,
    gate: ?Notify.Notified = null,
    locking: ?Mutex.Lock = null,
    acquiring: ?Semaphore.Acquire = null,
    reading: ?RwLock.Read = null,
    writing: ?RwLock.Write = null,
    waiting: ?Barrier.Wait = null,

    pub fn poll(self: *SteadyTask, cx: *Context) Poll(void) {
        const s = self.shared;
        if (self.step == 0) {
            if (future.isNull(&self.gate)) {
                self.gate = s.gate.notify.notified();
                if (s.gate.open.load(.acquire)) self.step = 1;
            }
            if (self.step == 0) {
                if (self.gate.?.poll(cx) == .pending) return .pending;
                self.step = 1;
            }
            self.gate = null;
        }
        while (self.remaining > 0) {
            switch (self.step) {
                1 => {
                    if (future.isNull(&self.locking)) self.locking = s.mutex.lock();
                    var guard = switch (self.locking.?.poll(cx)) {
                        .pending => return .pending,
                        .ready => |guard| guard,
                    };
                    self.locking = null;
                    s.counter += 1;
                    guard.unlock();
                },
                2 => {
                    if (future.isNull(&self.acquiring)) self.acquiring = s.semaphore.acquire(1);
                    if (self.acquiring.?.poll(cx) == .pending) return .pending;
                    self.acquiring = null;
                    s.semaphore.release(1);
                },
                3 => {
                    if (self.writer) {
                        if (future.isNull(&self.writing)) self.writing = s.rwlock.write();
                        var guard = switch (self.writing.?.poll(cx)) {
                            .pending => return .pending,
                            .ready => |guard| guard,
                        };
                        self.writing = null;
                        guard.unlock();
                    } else {
                        if (future.isNull(&self.reading)) self.reading = s.rwlock.read();
                        var guard = switch (self.reading.?.poll(cx)) {
                            .pending => return .pending,
                            .ready => |guard| guard,
                        };
                        self.reading = null;
                        guard.unlock();
                    }
                },
                4 => {
                    s.notify.notifyOne();
                    var notified = s.notify.notified();
                    if (future.pollOnce(&notified) == .pending) notified.cancel();
                },
                5 => {
                    if (future.isNull(&self.waiting)) self.waiting = s.barrier.wait();
                    if (self.waiting.?.poll(cx) == .pending) return .pending;
                    self.waiting = null;
                    self.remaining -= 1;
                    self.step = 0;
                },
                else => unreachable,
            }
            self.step += 1;
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *SteadyTask) void {
        if (self.gate) |*f| f.cancel();
        if (self.locking) |*f| f.cancel();
        if (self.acquiring) |*f| f.cancel();
        if (self.reading) |*f| f.cancel();
        if (self.writing) |*f| f.cancel();
        if (self.waiting) |*f| f.cancel();
    }
};

/// Opens the gate (run after the allocation count was reset).
const OpenGate = struct {
    pub const Output = void;
    gate: *Gate,
    pub fn poll(self: *OpenGate, cx: *Context) Poll(void) {
        _ = cx;
        self.gate.open.store(true, .release);
        self.gate.notify.notifyWaiters();
        return .{ .ready = {} };
    }
};

test "runtime: steady state of every primitive allocates nothing" {
    var counting = CountingAllocator.init(testing.allocator);
    const rt = try Runtime.init(counting.allocator(), .{ .workers = workers });
    defer rt.deinit();
    const rounds = ampere_testing.scaled(20_000, 20);
    var shared = SteadyShared{};
    var tasks: [4]SteadyTask = undefined;
    for (&tasks, 0..) |*task, i| task.* = .{ .shared = &shared, .remaining = rounds, .writer = i == 0 };
    var handles: [4]JoinHandle(void) = undefined;
    var results: [4]?(JoinError!void) = .{null} ** 4;
    for (&tasks, &handles) |task, *handle| handle.* = try rt.spawn(task);
    // Every task is allocated; they wait at the gate. Count from here.
    counting.reset();
    rt.blockOn(OpenGate{ .gate = &shared.gate });
    rt.blockOn(combinators.joinAll(&handles, &results));
    const allocations = counting.snapshot();
    for (results) |result| try result.?;
    try testing.expectEqual(@as(u64, 4 * rounds), shared.counter);
    try testing.expectEqual(@as(u64, 0), allocations.count);
    try testing.expectEqual(@as(u64, 0), allocations.bytes);
}
