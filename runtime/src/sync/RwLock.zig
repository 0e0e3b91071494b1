//! An async reader-writer lock on a `Semaphore` of `max_reads` permits (Tokio's design),
//! locked through guards.
//!
//! A reader takes one permit, a writer takes all `max_reads` of them. Because the semaphore
//! is FIFO and fills the request at its head before serving anyone behind it, a queued writer
//! collects permits as readers leave and no reader that arrives after it can pass it: writers
//! are not starved, and readers queued behind a writer are not starved either.
//!
//! State: the semaphore's word (Semaphore.zig). `max_reads << 2` with no flag means free.
//!
//! - `tryRead`: `tryAcquire(1)`: a load and one compare-and-swap; fails while anyone queues.
//!   Returns a `ReadGuard`, or null.
//! - `tryWrite`: one compare-and-swap `max_reads << 2 -> 0` (acquire). Returns a
//!   `WriteGuard`, or null.
//! - `ReadGuard.unlock` / `WriteGuard.unlock`: one fetch-add (release) of 1 / `max_reads` and
//!   one compare (see `Semaphore.releaseHeld`); only with waiters queued do they take the
//!   semaphore's lock and hand the permits over.
//! - `read()` / `write()`: futures whose Output is a `ReadGuard` / `WriteGuard`, FIFO.
//!
//! The lock has no owner and guards no data by itself: whoever holds a guard calls its
//! `unlock` exactly once. A guard is a value (`unlock` takes it as it is), so the one `tryRead`
//! or `tryWrite` returns can be unlocked where it is captured. Misuse is detected in every
//! build mode and panics:
//!
//! - `unlock` of a guard whose lock period is over. `epoch` counts write periods: a writer
//!   makes it odd when it takes the lock and even again at `unlock`; a guard records it when
//!   it is made. A write guard unlocked twice (or a copy of it after it) finds a newer epoch;
//!   so does a read guard unlocked after a writer has held the lock since it was released.
//! - a read unlock of a lock that nobody holds (the word had all `max_reads` permits: a read
//!   guard unlocked twice with no writer and no other reader since, or a copy of one), and a
//!   write unlock of a lock that is not write-locked (the word had any permit: a guard made by
//!   hand). Both fall out of the one compare the fast path already makes for waiters (a read
//!   unlock rotates the word first: one instruction more).
//!
//! Not detectable: a read guard unlocked twice (or a copy of one) while other readers hold the
//! lock and no writer came in between, or while a queued writer has been handed every permit
//! but has not taken the lock yet (readers have no identity in the word; the read guard's own
//! state cannot change now that `unlock` takes it by value).
//!
//! The epoch is written only by a writer holding every permit, so the permits' acquire/release
//! order every legitimate access; a misused guard may read it meanwhile, hence an atomic
//! (monotonic). Cost: a reader loads it twice (acquisition, unlock), a writer loads and
//! stores it at both ends.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Semaphore = @import("Semaphore.zig");
const Context = future.Context;

const RwLock = @This();

/// Maximum concurrent readers (Tokio's value: u32::MAX >> 3).
pub const max_reads: u32 = std.math.maxInt(u32) >> 3;

semaphore: Semaphore,
/// Write periods begun and ended (odd while a writer holds the lock; see the module comment).
epoch: std.atomic.Value(u64) = .init(0),

/// Panic message of `ReadGuard.unlock` of a guard released before a writer took the lock.
pub const read_double_unlock_message = "ampere.sync.RwLock: double unlock (this read guard, or a copy of it, was already unlocked)";
/// Panic message of `WriteGuard.unlock` of a guard that (or a copy of which) was unlocked already.
pub const write_double_unlock_message = "ampere.sync.RwLock: double unlock (this write guard, or a copy of it, was already unlocked)";
/// Panic message of a read unlock that found the lock free.
pub const read_not_locked_message = "ampere.sync.RwLock: read unlock of a lock that no reader holds";
/// Panic message of a write unlock that found the lock not write-locked.
pub const write_not_locked_message = "ampere.sync.RwLock: write unlock of a lock that is not write-locked";

pub fn init() RwLock {
    return .{ .semaphore = Semaphore.init(max_reads) };
}

/// Shared access if no writer holds the lock and nobody is queued; null otherwise.
pub fn tryRead(self: *RwLock) ?ReadGuard {
    if (!self.semaphore.tryAcquire(1)) return null;
    return ReadGuard.begin(self);
}

/// Exclusive access if the lock is free and nobody is queued; null otherwise.
pub fn tryWrite(self: *RwLock) ?WriteGuard {
    if (!self.semaphore.tryAcquireWhole(max_reads)) return null;
    return WriteGuard.begin(self);
}

/// A future that acquires shared (read) access. Output: `ReadGuard`.
pub fn read(self: *RwLock) Read {
    return self.semaphore.acquireNeverClosed(1, ReadGuard, ReadGuard.acquired);
}

/// A future that acquires exclusive (write) access. Output: `WriteGuard`.
pub fn write(self: *RwLock) Write {
    return self.semaphore.acquireNeverClosed(max_reads, WriteGuard, WriteGuard.acquired);
}

/// The future of `read()`: Output `ReadGuard` (an RwLock's semaphore is never closed).
pub const Read = Semaphore.AcquireNeverClosed(ReadGuard, ReadGuard.acquired);
/// The future of `write()`: Output `WriteGuard`.
pub const Write = Semaphore.AcquireNeverClosed(WriteGuard, WriteGuard.acquired);

/// Proof of shared access. `unlock` releases it; the guard (and every copy of it) is spent
/// afterwards.
pub const ReadGuard = struct {
    lock: *RwLock,
    /// `lock.epoch` when the read lock was taken (even: no writer held it).
    epoch: u64,

    fn begin(rw: *RwLock) ReadGuard {
        // Monotonic: the permit's acquire ordered the last writer's unlock before this.
        const epoch = rw.epoch.load(.monotonic);
        assert(epoch % 2 == 0);
        return .{ .lock = rw, .epoch = epoch };
    }

    fn acquired(semaphore: *Semaphore) ReadGuard {
        return begin(@fieldParentPtr("semaphore", semaphore));
    }

    /// Releases shared access. Panics (every build mode) on a guard already unlocked (when a
    /// writer held the lock since) and on a lock that no reader holds.
    pub fn unlock(self: ReadGuard) void {
        self.unlockChecked() catch |err| switch (err) {
            error.DoubleUnlock => @panic(read_double_unlock_message),
            error.NotLocked => @panic(read_not_locked_message),
        };
    }

    /// `unlock`, with the misuse returned instead of panicking (for the tests). After
    /// error.NotLocked the lock holds a permit too many: the caller must not go on.
    fn unlockChecked(self: ReadGuard) error{ DoubleUnlock, NotLocked }!void {
        const rw = self.lock;
        if (rw.epoch.load(.monotonic) != self.epoch) return error.DoubleUnlock;
        // While we hold our permit, the word has at most the other max_reads - 1.
        rw.semaphore.releaseHeld(1, max_reads - 1) catch return error.NotLocked;
    }
};

/// Proof of exclusive access. `unlock` releases it; the guard (and every copy of it) is spent
/// afterwards.
pub const WriteGuard = struct {
    lock: *RwLock,
    /// `lock.epoch` while this writer holds the lock (odd).
    epoch: u64,

    fn begin(rw: *RwLock) WriteGuard {
        // Monotonic: written only by the writer holding every permit (module comment).
        const epoch = rw.epoch.load(.monotonic) +% 1;
        assert(epoch % 2 == 1);
        rw.epoch.store(epoch, .monotonic);
        return .{ .lock = rw, .epoch = epoch };
    }

    fn acquired(semaphore: *Semaphore) WriteGuard {
        return begin(@fieldParentPtr("semaphore", semaphore));
    }

    /// Releases exclusive access. Panics (every build mode) on a guard already unlocked and
    /// on a lock that is not write-locked.
    pub fn unlock(self: WriteGuard) void {
        self.unlockChecked() catch |err| switch (err) {
            error.DoubleUnlock => @panic(write_double_unlock_message),
            error.NotLocked => @panic(write_not_locked_message),
        };
    }

    /// `unlock`, with the misuse returned instead of panicking (for the tests). After
    /// error.NotLocked the lock holds permits too many: the caller must not go on.
    fn unlockChecked(self: WriteGuard) error{ DoubleUnlock, NotLocked }!void {
        const rw = self.lock;
        const epoch = rw.epoch.load(.monotonic);
        if (epoch != self.epoch) return error.DoubleUnlock;
        // Before the release below: readers and the next writer see an even epoch.
        rw.epoch.store(epoch +% 1, .monotonic);
        // While we hold every permit, the word has none: 0, or `queued` (waiters).
        rw.semaphore.releaseHeld(max_reads, 0) catch return error.NotLocked;
    }
};

const testing = std.testing;
const Waker = @import("../Waker.zig");
const hook = @import("../hook.zig");

fn expectReady(acquisition: anytype, cx: *Context) !@TypeOf(acquisition.*).Output {
    return switch (acquisition.poll(cx)) {
        .ready => |guard| guard,
        .pending => error.TestExpectedReady,
    };
}

test "readers share, a writer excludes" {
    var rw = RwLock.init();
    const r1 = rw.tryRead() orelse return error.TestExpectedLock;
    const r2 = rw.tryRead() orelse return error.TestExpectedLock;
    try testing.expectEqual(&rw, r1.lock);
    try testing.expect(rw.tryWrite() == null);
    r1.unlock();
    r2.unlock();
    const w = rw.tryWrite() orelse return error.TestExpectedLock;
    try testing.expectEqual(&rw, w.lock);
    try testing.expectEqual(@as(u64, 1), w.epoch);
    try testing.expect(rw.tryRead() == null);
    try testing.expect(rw.tryWrite() == null);
    w.unlock();
    try testing.expectEqual(@as(u64, 2), rw.epoch.load(.monotonic));
    // Guards unlocked where they are captured, without a `var` (issue 20).
    if (rw.tryRead()) |g| g.unlock() else return error.TestExpectedLock;
    if (rw.tryWrite()) |g| g.unlock() else return error.TestExpectedLock;
    try testing.expectEqual(@as(usize, max_reads), rw.semaphore.availablePermits());
}

test "a queued writer stops new readers and gets the lock when the readers leave" {
    var rw = RwLock.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var r1 = rw.tryRead() orelse return error.TestExpectedLock;
    var r2 = rw.tryRead() orelse return error.TestExpectedLock;
    var writer = rw.write();
    try testing.expect(writer.poll(&cx) == .pending);
    try testing.expect(rw.tryRead() == null); // no barging past the writer
    var late_reader = rw.read();
    try testing.expect(late_reader.poll(&cx) == .pending);
    r1.unlock();
    try testing.expect(writer.poll(&cx) == .pending);
    r2.unlock();
    var write_guard = try expectReady(&writer, &cx);
    try testing.expect(late_reader.poll(&cx) == .pending);
    write_guard.unlock();
    var late_guard = try expectReady(&late_reader, &cx);
    var r3 = rw.tryRead() orelse return error.TestExpectedLock; // nobody queued any more
    r3.unlock();
    late_guard.unlock();
    var last = rw.tryWrite() orelse return error.TestExpectedLock;
    last.unlock();
}

test "a cancelled writer gives its collected permits to the readers behind it" {
    var rw = RwLock.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var first = rw.tryRead() orelse return error.TestExpectedLock;
    var writer = rw.write();
    try testing.expect(writer.poll(&cx) == .pending); // holds max_reads - 1
    var reader = rw.read();
    try testing.expect(reader.poll(&cx) == .pending);
    writer.cancel();
    var second = try expectReady(&reader, &cx);
    first.unlock();
    second.unlock();
    var last = rw.tryWrite() orelse return error.TestExpectedLock;
    last.unlock();
}

test "lost wake-up: writeUnlock between a reader's check and its lock" {
    var rw = RwLock.init();
    var held = rw.tryWrite() orelse return error.TestExpectedLock;
    const Unlock = struct {
        fn run(guard: *const WriteGuard) void {
            guard.unlock();
        }
    };
    hook.arm(.semaphore_acquire, &held, Unlock.run);
    defer hook.disarm();
    var reader = rw.read();
    var guard = switch (future.pollOnce(&reader)) {
        .ready => |g| g,
        .pending => return error.TestExpectedReady,
    };
    try testing.expect(hook.fired());
    guard.unlock();
    try testing.expectEqual(@as(usize, max_reads), rw.semaphore.availablePermits());
}

test "misuse: guards unlocked twice, copies unlocked after them, and unlocks of a lock not held" {
    var rw = RwLock.init();
    // A read guard unlocked twice with nobody else on the lock: the word has every permit.
    const reader = rw.tryRead() orelse return error.TestExpectedLock;
    try reader.unlockChecked();
    try testing.expectError(error.NotLocked, reader.unlockChecked());
    // (The word now holds a permit too many; start over.)
    rw = RwLock.init();
    const first = rw.tryRead() orelse return error.TestExpectedLock;
    try first.unlockChecked();
    // Once a writer has taken the lock, the spent read guard (or a copy) is caught by the
    // epoch — while the writer holds it, and after.
    const writer = rw.tryWrite() orelse return error.TestExpectedLock;
    const writer_copy = writer;
    try testing.expectError(error.DoubleUnlock, first.unlockChecked());
    try writer.unlockChecked();
    try testing.expectError(error.DoubleUnlock, first.unlockChecked());
    try testing.expectError(error.DoubleUnlock, writer.unlockChecked());
    try testing.expectError(error.DoubleUnlock, writer_copy.unlockChecked());
    // A spent write guard while another writer holds the lock: that lock is left alone.
    const second_writer = rw.tryWrite() orelse return error.TestExpectedLock;
    try testing.expectError(error.DoubleUnlock, writer.unlockChecked());
    try second_writer.unlockChecked();
    try testing.expectEqual(@as(usize, max_reads), rw.semaphore.availablePermits());
    // Guards made by hand: a read unlock of a free lock, a write unlock while a reader holds it.
    var free = RwLock.init();
    const stale = ReadGuard{ .lock = &free, .epoch = 0 };
    try testing.expectError(error.NotLocked, stale.unlockChecked());
    var shared = RwLock.init();
    _ = shared.tryRead() orelse return error.TestExpectedLock;
    const forged = WriteGuard{ .lock = &shared, .epoch = 0 };
    try testing.expectError(error.NotLocked, forged.unlockChecked());
    // The lock is corrupt now; do not touch it again.
}

test "misuse: the panics abort a ReleaseFast program with their messages" {
    const misuse = @import("misuse_tests.zig");
    try misuse.expectPanic("rwlock_read_double_unlock", read_not_locked_message);
    try misuse.expectPanic("rwlock_read_unlock_copy", read_not_locked_message);
    try misuse.expectPanic("rwlock_read_unlock_after_writer", read_double_unlock_message);
    try misuse.expectPanic("rwlock_write_double_unlock", write_double_unlock_message);
    try misuse.expectPanic("rwlock_write_unlock_copy", write_double_unlock_message);
}
