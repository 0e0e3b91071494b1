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
//! `unlock` exactly once. Misuse is detected in every build mode and panics:
//!
//! - `unlock` of a guard already unlocked (its pointer is cleared by the first `unlock`),
//!   whatever happened to the lock in between.
//! - a read unlock of a lock that nobody holds (the word had all `max_reads` permits), and a
//!   write unlock of a lock that is not write-locked (the word had any permit): a copy of a
//!   guard unlocked after the original, or a guard made by hand. Both fall out of the one
//!   compare the fast path already makes for waiters (a read unlock rotates the word first:
//!   one instruction more). Not detectable: a read unlock through a stale copy while other
//!   readers or a writer hold the lock (a reader has no identity in the word).

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Semaphore = @import("Semaphore.zig");
const Context = future.Context;

const RwLock = @This();

/// Maximum concurrent readers (Tokio's value: u32::MAX >> 3).
pub const max_reads: u32 = std.math.maxInt(u32) >> 3;

semaphore: Semaphore,

/// Panic message of `ReadGuard.unlock` called a second time on the same guard.
pub const read_double_unlock_message = "ampere.sync.RwLock: double unlock (this read guard was already unlocked)";
/// Panic message of `WriteGuard.unlock` called a second time on the same guard.
pub const write_double_unlock_message = "ampere.sync.RwLock: double unlock (this write guard was already unlocked)";
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
    return .{ .lock = self };
}

/// Exclusive access if the lock is free and nobody is queued; null otherwise.
pub fn tryWrite(self: *RwLock) ?WriteGuard {
    if (!self.semaphore.tryAcquireWhole(max_reads)) return null;
    return .{ .lock = self };
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

/// Proof of shared access. `unlock` releases it; the guard is spent afterwards. Keep it in a
/// `var` and do not copy it.
pub const ReadGuard = struct {
    /// The read-locked lock; null once `unlock` ran.
    lock: ?*RwLock,

    fn acquired(semaphore: *Semaphore) ReadGuard {
        return .{ .lock = @fieldParentPtr("semaphore", semaphore) };
    }

    /// Releases shared access. Panics (every build mode) on a guard already unlocked and on a
    /// lock that no reader holds.
    pub fn unlock(self: *ReadGuard) void {
        self.unlockChecked() catch |err| switch (err) {
            error.DoubleUnlock => @panic(read_double_unlock_message),
            error.NotLocked => @panic(read_not_locked_message),
        };
    }

    /// `unlock`, with the misuse returned instead of panicking (for the tests). After
    /// error.NotLocked the lock holds a permit too many: the caller must not go on.
    fn unlockChecked(self: *ReadGuard) error{ DoubleUnlock, NotLocked }!void {
        const rw = self.lock orelse return error.DoubleUnlock;
        self.lock = null;
        // While we hold our permit, the word has at most the other max_reads - 1.
        rw.semaphore.releaseHeld(1, max_reads - 1) catch return error.NotLocked;
    }
};

/// Proof of exclusive access. `unlock` releases it; the guard is spent afterwards. Keep it in
/// a `var` and do not copy it.
pub const WriteGuard = struct {
    /// The write-locked lock; null once `unlock` ran.
    lock: ?*RwLock,

    fn acquired(semaphore: *Semaphore) WriteGuard {
        return .{ .lock = @fieldParentPtr("semaphore", semaphore) };
    }

    /// Releases exclusive access. Panics (every build mode) on a guard already unlocked and
    /// on a lock that is not write-locked.
    pub fn unlock(self: *WriteGuard) void {
        self.unlockChecked() catch |err| switch (err) {
            error.DoubleUnlock => @panic(write_double_unlock_message),
            error.NotLocked => @panic(write_not_locked_message),
        };
    }

    /// `unlock`, with the misuse returned instead of panicking (for the tests). After
    /// error.NotLocked the lock holds permits too many: the caller must not go on.
    fn unlockChecked(self: *WriteGuard) error{ DoubleUnlock, NotLocked }!void {
        const rw = self.lock orelse return error.DoubleUnlock;
        self.lock = null;
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
    var r1 = rw.tryRead() orelse return error.TestExpectedLock;
    var r2 = rw.tryRead() orelse return error.TestExpectedLock;
    try testing.expectEqual(&rw, r1.lock.?);
    try testing.expect(rw.tryWrite() == null);
    r1.unlock();
    r2.unlock();
    try testing.expect(r1.lock == null and r2.lock == null);
    var w = rw.tryWrite() orelse return error.TestExpectedLock;
    try testing.expectEqual(&rw, w.lock.?);
    try testing.expect(rw.tryRead() == null);
    try testing.expect(rw.tryWrite() == null);
    w.unlock();
    try testing.expect(w.lock == null);
    var r3 = rw.tryRead() orelse return error.TestExpectedLock;
    r3.unlock();
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
        fn run(guard: *WriteGuard) void {
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

test "misuse: guards unlocked twice, and unlocks of a lock not held" {
    var rw = RwLock.init();
    var reader = rw.tryRead() orelse return error.TestExpectedLock;
    try reader.unlockChecked();
    try testing.expectError(error.DoubleUnlock, reader.unlockChecked());
    // Detected through the guard even while a writer holds the lock meanwhile.
    var writer = rw.tryWrite() orelse return error.TestExpectedLock;
    var writer_copy = writer;
    try testing.expectError(error.DoubleUnlock, reader.unlockChecked());
    try writer.unlockChecked();
    try testing.expectError(error.DoubleUnlock, writer.unlockChecked());
    // The copies point at a lock that is free now: the word says so.
    try testing.expectError(error.NotLocked, writer_copy.unlockChecked());
    var free = RwLock.init();
    var stale = ReadGuard{ .lock = &free };
    try testing.expectError(error.NotLocked, stale.unlockChecked());
    // A write unlock while a reader holds the lock: the word has max_reads - 1 permits.
    var shared = RwLock.init();
    var shared_reader = shared.tryRead() orelse return error.TestExpectedLock;
    var forged = WriteGuard{ .lock = &shared };
    try testing.expectError(error.NotLocked, forged.unlockChecked());
    shared_reader.lock = null; // the lock is corrupt now; do not touch it again
}

test "misuse: the panics abort a ReleaseFast program with their messages" {
    const misuse = @import("misuse_tests.zig");
    try misuse.expectPanic("rwlock_read_double_unlock", read_double_unlock_message);
    try misuse.expectPanic("rwlock_read_unlock_copy", read_not_locked_message);
    try misuse.expectPanic("rwlock_write_double_unlock", write_double_unlock_message);
    try misuse.expectPanic("rwlock_write_unlock_copy", write_not_locked_message);
}
