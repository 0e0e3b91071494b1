//! An async reader-writer lock on a `Semaphore` of `max_reads` permits (Tokio's design).
//!
//! A reader takes one permit, a writer takes all `max_reads` of them. Because the semaphore
//! is FIFO and fills the request at its head before serving anyone behind it, a queued writer
//! collects permits as readers leave and no reader that arrives after it can pass it: writers
//! are not starved, and readers queued behind a writer are not starved either.
//!
//! State: the semaphore's word (Semaphore.zig). `max_reads << 2` with no flag means free.
//!
//! - `tryRead`: `tryAcquire(1)`: a load and one compare-and-swap; fails while anyone queues.
//! - `tryWrite`: one compare-and-swap `max_reads << 2 -> 0` (acquire).
//! - `readUnlock` / `writeUnlock`: one fetch-add (release) of 1 / `max_reads`; only with
//!   waiters queued do they take the semaphore's lock and hand the permits over.
//! - `read()` / `write()`: futures (Output void), FIFO.
//!
//! The lock has no owner and guards no data by itself: whoever completed a read (write)
//! acquisition calls `readUnlock` (`writeUnlock`) exactly once.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Semaphore = @import("Semaphore.zig");
const Context = future.Context;

const RwLock = @This();

/// Maximum concurrent readers (Tokio's value: u32::MAX >> 3).
pub const max_reads: u32 = std.math.maxInt(u32) >> 3;

semaphore: Semaphore,

pub fn init() RwLock {
    return .{ .semaphore = Semaphore.init(max_reads) };
}

pub fn tryRead(self: *RwLock) bool {
    return self.semaphore.tryAcquire(1);
}

pub fn tryWrite(self: *RwLock) bool {
    return self.semaphore.tryAcquireWhole(max_reads);
}

/// A future that acquires shared (read) access. Output: void.
pub fn read(self: *RwLock) Acquire {
    return self.semaphore.acquireNeverClosed(1);
}

/// A future that acquires exclusive (write) access. Output: void.
pub fn write(self: *RwLock) Acquire {
    return self.semaphore.acquireNeverClosed(max_reads);
}

pub fn readUnlock(self: *RwLock) void {
    const permits_before = self.semaphore.addPermits(1);
    assert(permits_before < max_reads); // read-unlock without a reader
}

pub fn writeUnlock(self: *RwLock) void {
    const permits_before = self.semaphore.addPermits(max_reads);
    assert(permits_before == 0); // write-unlock without the writer
}

/// The future of `read()` and `write()`: Output void (an RwLock's semaphore is never closed).
pub const Acquire = Semaphore.AcquireNeverClosed;

const testing = std.testing;
const Waker = @import("../Waker.zig");
const hook = @import("hook.zig");

test "readers share, a writer excludes" {
    var rw = RwLock.init();
    try testing.expect(rw.tryRead());
    try testing.expect(rw.tryRead());
    try testing.expect(!rw.tryWrite());
    rw.readUnlock();
    rw.readUnlock();
    try testing.expect(rw.tryWrite());
    try testing.expect(!rw.tryRead());
    try testing.expect(!rw.tryWrite());
    rw.writeUnlock();
    try testing.expect(rw.tryRead());
    rw.readUnlock();
}

test "a queued writer stops new readers and gets the lock when the readers leave" {
    var rw = RwLock.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    try testing.expect(rw.tryRead());
    try testing.expect(rw.tryRead());
    var writer = rw.write();
    try testing.expect(writer.poll(&cx) == .pending);
    try testing.expect(!rw.tryRead()); // no barging past the writer
    var late_reader = rw.read();
    try testing.expect(late_reader.poll(&cx) == .pending);
    rw.readUnlock();
    try testing.expect(writer.poll(&cx) == .pending);
    rw.readUnlock();
    try testing.expect(writer.poll(&cx) == .ready);
    try testing.expect(late_reader.poll(&cx) == .pending);
    rw.writeUnlock();
    try testing.expect(late_reader.poll(&cx) == .ready);
    try testing.expect(rw.tryRead()); // nobody queued any more
    rw.readUnlock();
    rw.readUnlock();
    try testing.expect(rw.tryWrite());
    rw.writeUnlock();
}

test "a cancelled writer gives its collected permits to the readers behind it" {
    var rw = RwLock.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    try testing.expect(rw.tryRead());
    var writer = rw.write();
    try testing.expect(writer.poll(&cx) == .pending); // holds max_reads - 1
    var reader = rw.read();
    try testing.expect(reader.poll(&cx) == .pending);
    writer.cancel();
    try testing.expect(reader.poll(&cx) == .ready);
    rw.readUnlock();
    rw.readUnlock();
    try testing.expect(rw.tryWrite());
    rw.writeUnlock();
}

test "lost wake-up: writeUnlock between a reader's check and its lock" {
    var rw = RwLock.init();
    try testing.expect(rw.tryWrite());
    const Unlock = struct {
        fn run(lock: *RwLock) void {
            lock.writeUnlock();
        }
    };
    hook.arm(.semaphore_acquire, &rw, Unlock.run);
    defer hook.disarm();
    var reader = rw.read();
    try testing.expect(future.pollOnce(&reader) == .ready);
    try testing.expect(hook.fired());
    rw.readUnlock();
}
