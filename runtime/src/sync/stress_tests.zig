//! Multi-threaded stress tests of the sync primitives, on OS threads with the thread executor
//! (`blockOnThread`), plus the zero-allocation checks.
//!
//! Each test checks an exact invariant (final counts, "never more than k inside", "exactly one
//! leader per generation", "no permit lost": a lost wake-up hangs the test). Sizes come from
//! `testing.scaled`: full intensity runs the sizes the issues ask for (contended Mutex
//! 4 x 250,000), smoke intensity (ThreadSanitizer in CI) a small fraction. Randomised tests
//! take their seed from `testing.seed()` and print it on failure. Worker threads never panic
//! on a violated invariant: they count it in `Shared.failures`, and the test fails (printing
//! the seed) after joining them.

const std = @import("std");
const ampere_testing = @import("../testing.zig");
const blockOnThread = @import("../block_on.zig").blockOnThread;
const CountingAllocator = @import("../CountingAllocator.zig");
const future = @import("../future.zig");
const Waker = @import("../Waker.zig");
const SharedParker = @import("../SharedParker.zig");
const Semaphore = @import("Semaphore.zig");
const Mutex = @import("Mutex.zig");
const RwLock = @import("RwLock.zig");
const Notify = @import("Notify.zig");
const Barrier = @import("Barrier.zig");
const OnceCell = @import("once_cell.zig").OnceCell;

const testing = std.testing;
const Atomic = std.atomic.Value;

const threads_max = 8;

/// A fixed set of threads (no allocation), joined together.
const ThreadGroup = struct {
    threads: [threads_max]std.Thread = undefined,
    count: usize = 0,

    fn spawn(self: *ThreadGroup, comptime function: anytype, args: anytype) !void {
        std.debug.assert(self.count < threads_max);
        self.threads[self.count] = try std.Thread.spawn(.{}, function, args);
        self.count += 1;
    }

    fn join(self: *ThreadGroup) void {
        for (self.threads[0..self.count]) |thread| thread.join();
        self.count = 0;
    }
};

fn check(failures: *Atomic(u32), ok: bool) void {
    // Monotonic: read after join, which synchronises.
    if (!ok) _ = failures.fetchAdd(1, .monotonic);
}

/// Polls `f` once with this thread's parker waker; if still pending, cancels it when
/// `cancel_it`, else runs it to completion. Returns true if it completed.
fn pollOnceThen(f: anytype, cancel_it: bool) bool {
    const parker = SharedParker.Pool.global().acquire() catch @panic("out of memory for a parker");
    defer parker.release();
    const waker = parker.waker();
    var cx = future.Context.init(&waker);
    if (f.poll(&cx) == .ready) return true;
    if (cancel_it) {
        f.cancel();
        return false;
    }
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    if (comptime @typeInfo(F.Output) == .error_union) {
        _ = blockOnThread(f) catch unreachable; // only never-closed semaphores here
    } else {
        _ = blockOnThread(f);
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// Mutex

const MutexShared = struct {
    mutex: Mutex = Mutex.init(),
    /// Plain (non-atomic) on purpose: only the lock protects it, so a broken lock shows up as
    /// lost increments, and as a data race under ThreadSanitizer.
    counter: u64 = 0,
    inside: Atomic(u32) = .init(0),
    failures: Atomic(u32) = .init(0),
    iterations: usize,

    fn critical(self: *MutexShared) void {
        // Monotonic: a pure exclusion check; the lock provides the ordering being tested.
        check(&self.failures, self.inside.fetchAdd(1, .monotonic) == 0);
        self.counter += 1;
        _ = self.inside.fetchSub(1, .monotonic);
    }

    fn worker(self: *MutexShared, index: usize) void {
        for (0..self.iterations) |i| {
            if ((i + index) % 8 == 0) {
                if (self.mutex.tryLock()) |guard| {
                    self.critical();
                    guard.unlock();
                    continue;
                }
            }
            var lock = self.mutex.lock();
            var guard = blockOnThread(&lock);
            self.critical();
            guard.unlock();
        }
    }
};

test "stress: contended Mutex, 4 threads, exact count" {
    var shared = MutexShared{ .iterations = ampere_testing.scaled(250_000, 25) };
    var group = ThreadGroup{};
    for (0..4) |i| try group.spawn(MutexShared.worker, .{ &shared, i });
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(u64, 4 * shared.iterations), shared.counter);
    var guard = shared.mutex.tryLock() orelse return error.TestMutexStillLocked;
    guard.unlock();
}

// ---------------------------------------------------------------------------------------
// Semaphore

const SemaphoreShared = struct {
    const permits = 3;

    semaphore: Semaphore = Semaphore.init(permits),
    in_use: Atomic(usize) = .init(0),
    max_in_use: Atomic(usize) = .init(0),
    failures: Atomic(u32) = .init(0),
    iterations: usize,
    seed: u64,

    fn worker(self: *SemaphoreShared, index: usize) void {
        var prng = std.Random.DefaultPrng.init(self.seed +% index);
        const random = prng.random();
        for (0..self.iterations) |_| {
            const n = random.intRangeAtMost(usize, 1, permits);
            const acquired = switch (random.uintLessThan(u8, 4)) {
                0 => self.semaphore.tryAcquire(n),
                1 => blk: {
                    // Poll once, then maybe cancel: exercises cancel racing with hand-off
                    // (permits partially assigned and given back).
                    var acquire = self.semaphore.acquire(n);
                    break :blk pollOnceThen(&acquire, random.boolean());
                },
                else => blk: {
                    var acquire = self.semaphore.acquire(n);
                    blockOnThread(&acquire) catch {
                        check(&self.failures, false); // never closed
                        break :blk false;
                    };
                    break :blk true;
                },
            };
            if (!acquired) continue;
            // Monotonic: a counting check; the semaphore provides the ordering being tested.
            const now = self.in_use.fetchAdd(n, .monotonic) + n;
            check(&self.failures, now <= permits);
            _ = self.max_in_use.fetchMax(now, .monotonic);
            _ = self.in_use.fetchSub(n, .monotonic);
            self.semaphore.release(n);
        }
    }
};

test "stress: Semaphore of 3 never admits more than 3, with random sizes and cancels" {
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("Semaphore stress", seed);
    var shared = SemaphoreShared{ .iterations = ampere_testing.scaled(50_000, 10), .seed = seed };
    var group = ThreadGroup{};
    for (0..6) |i| try group.spawn(SemaphoreShared.worker, .{ &shared, i });
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expect(shared.max_in_use.load(.monotonic) <= SemaphoreShared.permits);
    try testing.expectEqual(@as(usize, SemaphoreShared.permits), shared.semaphore.availablePermits());
    try testing.expect(shared.semaphore.waiters.isEmpty());
}

// ---------------------------------------------------------------------------------------
// RwLock

const RwLockShared = struct {
    lock: RwLock = RwLock.init(),
    readers: Atomic(u32) = .init(0),
    writers: Atomic(u32) = .init(0),
    /// Written only under the write lock, read under the read lock (plain on purpose).
    value: u64 = 0,
    failures: Atomic(u32) = .init(0),
    iterations: usize,

    fn reader(self: *RwLockShared, index: usize) void {
        var last: u64 = 0;
        for (0..self.iterations) |i| {
            const fast = if ((i + index) % 4 == 0) self.lock.tryRead() else null;
            var guard = fast orelse blk: {
                var read = self.lock.read();
                break :blk blockOnThread(&read);
            };
            _ = self.readers.fetchAdd(1, .monotonic);
            check(&self.failures, self.writers.load(.monotonic) == 0);
            check(&self.failures, self.value >= last); // writes are never seen undone
            last = self.value;
            _ = self.readers.fetchSub(1, .monotonic);
            guard.unlock();
        }
    }

    fn writer(self: *RwLockShared, index: usize) void {
        for (0..self.iterations) |i| {
            const fast = if ((i + index) % 4 == 0) self.lock.tryWrite() else null;
            var guard = fast orelse blk: {
                var write = self.lock.write();
                break :blk blockOnThread(&write);
            };
            check(&self.failures, self.writers.fetchAdd(1, .monotonic) == 0);
            check(&self.failures, self.readers.load(.monotonic) == 0);
            self.value += 1;
            _ = self.writers.fetchSub(1, .monotonic);
            guard.unlock();
        }
    }
};

test "stress: RwLock never lets a writer in with readers or another writer" {
    var shared = RwLockShared{ .iterations = ampere_testing.scaled(50_000, 10) };
    var group = ThreadGroup{};
    for (0..4) |i| try group.spawn(RwLockShared.reader, .{ &shared, i });
    for (0..2) |i| try group.spawn(RwLockShared.writer, .{ &shared, i });
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(u64, 2 * shared.iterations), shared.value);
    var guard = shared.lock.tryWrite() orelse return error.TestRwLockStillLocked;
    guard.unlock();
}

// ---------------------------------------------------------------------------------------
// Barrier

const BarrierShared = struct {
    const parties = 4;

    barrier: Barrier = Barrier.init(parties),
    arrivals: []Atomic(u32),
    leaders: []Atomic(u32),
    failures: Atomic(u32) = .init(0),

    fn worker(self: *BarrierShared) void {
        for (self.arrivals, self.leaders) |*arrived, *leaders| {
            // Monotonic is enough: the barrier itself must order these increments before
            // every party's release (that is what is being tested).
            _ = arrived.fetchAdd(1, .monotonic);
            var wait = self.barrier.wait();
            const result = blockOnThread(&wait);
            check(&self.failures, arrived.load(.monotonic) == parties);
            if (result.is_leader) _ = leaders.fetchAdd(1, .monotonic);
        }
    }
};

test "stress: Barrier releases every generation once, with exactly one leader" {
    var counting = CountingAllocator.init(testing.allocator);
    const allocator = counting.allocator();
    const generations = ampere_testing.scaled(20_000, 10);
    const arrivals = try allocator.alloc(Atomic(u32), generations);
    defer allocator.free(arrivals);
    const leaders = try allocator.alloc(Atomic(u32), generations);
    defer allocator.free(leaders);
    @memset(arrivals, .init(0));
    @memset(leaders, .init(0));
    var shared = BarrierShared{ .arrivals = arrivals, .leaders = leaders };
    var group = ThreadGroup{};
    for (0..BarrierShared.parties) |_| try group.spawn(BarrierShared.worker, .{&shared});
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    for (leaders) |*count| try testing.expectEqual(@as(u32, 1), count.load(.monotonic));
    try testing.expectEqual(@as(u32, @truncate(generations)), @as(u32, @truncate(shared.barrier.state.load(.monotonic) >> 32)));
}

// ---------------------------------------------------------------------------------------
// Notify

const NotifyShared = struct {
    notify: Notify = .{},
    tokens: Atomic(u64) = .init(0),
    consumed: Atomic(u64) = .init(0),
    done: Atomic(bool) = .init(false),
    failures: Atomic(u32) = .init(0),
    per_producer: u64,
    producers: u64,
    seed: u64,

    fn total(self: *const NotifyShared) u64 {
        return self.per_producer * self.producers;
    }

    fn producer(self: *NotifyShared) void {
        for (0..self.per_producer) |_| {
            // Release: the token is visible to the consumer woken by this notification.
            _ = self.tokens.fetchAdd(1, .release);
            self.notify.notifyOne();
        }
    }

    fn takeToken(self: *NotifyShared) bool {
        var tokens = self.tokens.load(.acquire);
        while (tokens > 0) {
            tokens = self.tokens.cmpxchgWeak(tokens, tokens - 1, .acquire, .acquire) orelse return true;
        }
        return false;
    }

    /// Create the future, then check, then wait (Tokio's pattern): a lost notification would
    /// leave a token unconsumed and hang this consumer.
    fn consumer(self: *NotifyShared, index: usize) void {
        var prng = std.Random.DefaultPrng.init(self.seed +% index);
        const random = prng.random();
        while (true) {
            var notified = self.notify.notified();
            if (self.takeToken()) {
                notified.cancel();
                const consumed = self.consumed.fetchAdd(1, .acq_rel) + 1;
                check(&self.failures, consumed <= self.total());
                if (consumed == self.total()) {
                    self.done.store(true, .release);
                    self.notify.notifyWaiters();
                }
                continue;
            }
            if (self.done.load(.acquire)) {
                notified.cancel();
                return;
            }
            // Sometimes poll once and cancel: a notifyOne that picked us is forwarded.
            if (!pollOnceThen(&notified, random.uintLessThan(u8, 8) == 0)) continue;
        }
    }
};

test "stress: Notify never loses a notifyOne; notifyWaiters reaches futures created before it" {
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("Notify stress", seed);
    var shared = NotifyShared{ .per_producer = ampere_testing.scaled(100_000, 10), .producers = 2, .seed = seed };
    var group = ThreadGroup{};
    for (0..2) |_| try group.spawn(NotifyShared.producer, .{&shared});
    for (0..3) |i| try group.spawn(NotifyShared.consumer, .{ &shared, i });
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(shared.total(), shared.consumed.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), shared.tokens.load(.monotonic));
    try testing.expect(shared.notify.waiters.isEmpty());
}

// ---------------------------------------------------------------------------------------
// OnceCell

/// Init future: yields once (wakes itself and returns pending) so that other callers queue
/// behind it, then counts its completion.
pub const CountingInit = struct {
    pub const Output = u64;
    value: u64,
    completions: *Atomic(u32),
    yielded: bool = false,

    pub fn poll(self: *CountingInit, cx: *future.Context) future.Poll(u64) {
        if (!self.yielded) {
            self.yielded = true;
            cx.waker().wakeByRef();
            return .pending;
        }
        _ = self.completions.fetchAdd(1, .monotonic);
        return .{ .ready = self.value };
    }
};

const Cell = OnceCell(u64);

const OnceCellShared = struct {
    cells: []Cell,
    completions: []Atomic(u32),
    failures: Atomic(u32) = .init(0),
    seed: u64,

    fn worker(self: *OnceCellShared, index: usize) void {
        var prng = std.Random.DefaultPrng.init(self.seed +% index);
        const random = prng.random();
        for (self.cells, self.completions, 0..) |*cell, *completions, round| {
            const expected = round * 1000;
            if (random.uintLessThan(u8, 4) == 0) {
                // Poll once and cancel: an initializer cancelled this way hands its role on.
                var op = cell.getOrInit(CountingInit{ .value = expected, .completions = completions });
                _ = pollOnceThen(&op, true);
            }
            if (random.uintLessThan(u8, 8) == 0) {
                cell.set(expected) catch {};
            }
            var op = cell.getOrInit(CountingInit{ .value = expected, .completions = completions });
            const value = blockOnThread(&op);
            check(&self.failures, value == &cell.value and value.* == expected);
            check(&self.failures, cell.get() == value);
        }
    }
};

test "stress: OnceCell runs at most one initializer per cell, racing and cancelling" {
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("OnceCell stress", seed);
    const rounds = ampere_testing.scaled(5_000, 10);
    const cells = try testing.allocator.alloc(Cell, rounds);
    defer testing.allocator.free(cells);
    const completions = try testing.allocator.alloc(Atomic(u32), rounds);
    defer testing.allocator.free(completions);
    @memset(cells, Cell.init());
    @memset(completions, .init(0));
    var shared = OnceCellShared{ .cells = cells, .completions = completions, .seed = seed };
    var group = ThreadGroup{};
    for (0..4) |i| try group.spawn(OnceCellShared.worker, .{ &shared, i });
    group.join();
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    // At most one init future completed per cell (zero when `set` won the race).
    for (completions) |*count| try testing.expect(count.load(.monotonic) <= 1);
    for (cells, 0..) |*cell, round| try testing.expectEqual(@as(u64, round * 1000), cell.get().?.*);
}

// ---------------------------------------------------------------------------------------
// Zero allocations

/// True when some public function of `T` takes an allocator.
fn takesAllocator(comptime T: type) bool {
    inline for (@typeInfo(T).@"struct".decls) |decl| {
        const field = @field(T, decl.name);
        if (@TypeOf(field) == type) continue;
        const info = @typeInfo(@TypeOf(field));
        if (info != .@"fn") continue;
        inline for (info.@"fn".params) |param| {
            if (param.type == std.mem.Allocator) return true;
        }
    }
    return false;
}

test "no primitive takes an allocator" {
    inline for (.{ Semaphore, Mutex, RwLock, Notify, Barrier, Cell, Cell.GetOrInit(CountingInit) }) |T| {
        try testing.expect(!takesAllocator(T));
    }
}

const SteadyState = struct {
    mutex: Mutex = Mutex.init(),
    rwlock: RwLock = RwLock.init(),
    semaphore: Semaphore = Semaphore.init(2),
    notify: Notify = .{},
    barrier: Barrier = Barrier.init(4),
    cells: []Cell,
    completions: []Atomic(u32),
    counter: u64 = 0,
    iterations: usize,

    fn worker(self: *SteadyState, index: usize) void {
        for (0..self.iterations) |i| {
            var lock = self.mutex.lock();
            var guard = blockOnThread(&lock);
            self.counter += 1;
            guard.unlock();

            if (index % 2 == 0) {
                var read = self.rwlock.read();
                var read_guard = blockOnThread(&read);
                read_guard.unlock();
            } else {
                var write = self.rwlock.write();
                var write_guard = blockOnThread(&write);
                write_guard.unlock();
            }

            var acquire = self.semaphore.acquire(1);
            blockOnThread(&acquire) catch unreachable;
            self.semaphore.release(1);

            self.notify.notifyOne();
            var notified = self.notify.notified();
            _ = pollOnceThen(&notified, true);

            const cell = &self.cells[i];
            var op = cell.getOrInit(CountingInit{ .value = i, .completions = &self.completions[i] });
            std.debug.assert(blockOnThread(&op).* == i);

            var wait = self.barrier.wait();
            _ = blockOnThread(&wait);
        }
    }
};

test "steady state of every primitive performs zero allocations" {
    var counting = CountingAllocator.init(testing.allocator);
    const allocator = counting.allocator();
    // Setup: everything the harness needs is allocated here, before the count is reset.
    const iterations = ampere_testing.scaled(5_000, 10);
    const cells = try allocator.alloc(Cell, iterations);
    defer allocator.free(cells);
    const completions = try allocator.alloc(Atomic(u32), iterations);
    defer allocator.free(completions);
    @memset(cells, Cell.init());
    @memset(completions, .init(0));
    const state = try allocator.create(SteadyState);
    defer allocator.destroy(state);
    state.* = .{ .cells = cells, .completions = completions, .iterations = iterations };
    try testing.expect(counting.snapshot().count == 3);
    counting.reset();

    var group = ThreadGroup{};
    for (0..4) |i| try group.spawn(SteadyState.worker, .{ state, i });
    group.join();

    try testing.expectEqual(@as(u64, 0), counting.snapshot().count);
    try testing.expectEqual(@as(u64, 0), counting.snapshot().bytes);
    try testing.expectEqual(@as(u64, 4 * iterations), state.counter);
    for (completions) |*count| try testing.expectEqual(@as(u32, 1), count.load(.monotonic));
}
