//! A reference-counted immutable byte buffer: the Zig counterpart of Rust's `Arc<[u8]>` (and
//! of `Arc<Vec<u8>>`), used by the echo benchmark's shared-buffer sweep, where only the
//! reference travels, and as the payload of the `watch_rc`/`broadcast_rc` benchmarks. A
//! `*RcBuffer` is an owned channel value (`channel/common.zig`, `Ownership`): Watch and
//! Broadcast hand each receiver its own `clone`, and release the references they keep.
//!
//! One allocation holds the header (reference count, length, allocator) followed by the bytes,
//! so creating a buffer is one allocation (like `Arc<[u8]>`; `Arc<Vec<u8>>` needs two) and
//! `bytes()` is pointer arithmetic. The bytes may be written through `bytesMut()` only while the caller holds the
//! sole reference (right after `create`); afterwards they are immutable and may be read from
//! any thread.
//!
//! Reference counting follows `Arc` exactly:
//!
//! - `clone`: `fetchAdd(1, monotonic)`. A new reference is made from an existing one, which
//!   already keeps the buffer alive, so no ordering is needed; the buffer itself is passed to
//!   another thread by some other synchronising means (a channel).
//! - `release`: `fetchSub(1, release)`. Release orders every use of the buffer by this holder
//!   before its decrement. The holder that takes the count from 1 to 0 then performs an acquire
//!   (Rust uses an acquire fence; Zig has no fence builtin, and like Rust under
//!   ThreadSanitizer we load the counter with acquire instead). The decrements form a release
//!   sequence on the counter, so this acquire synchronises with every earlier release: all
//!   other holders' uses happen before the free.
//! - Overflow: more than `refs_max` references is treated as a bug (`Arc` aborts likewise).

const std = @import("std");
const Allocator = std.mem.Allocator;
const assert = std.debug.assert;

const RcBuffer = @This();

/// Like `Arc`'s `isize::MAX` limit: far beyond any real use, catches leaks in loops.
pub const refs_max: usize = std.math.maxInt(isize);

refs: std.atomic.Value(usize),
len: usize,
allocator: Allocator,

const header_size = @sizeOf(RcBuffer);
const alignment = std.mem.Alignment.of(RcBuffer);

/// A buffer of `len` uninitialised bytes with one reference; fill it through `bytesMut`
/// before sharing it.
pub fn create(allocator: Allocator, len: usize) Allocator.Error!*RcBuffer {
    const total = std.math.add(usize, header_size, len) catch return error.OutOfMemory;
    const memory = try allocator.alignedAlloc(u8, alignment, total);
    const self: *RcBuffer = @ptrCast(memory.ptr);
    self.* = .{ .refs = .init(1), .len = len, .allocator = allocator };
    return self;
}

/// A buffer holding a copy of `contents`, with one reference.
pub fn init(allocator: Allocator, contents: []const u8) Allocator.Error!*RcBuffer {
    const self = try create(allocator, contents.len);
    @memcpy(self.bytesMut(), contents);
    return self;
}

/// Another reference to the same buffer (no copy, no allocation).
pub fn clone(self: *RcBuffer) *RcBuffer {
    // Monotonic: see the module comment.
    const previous = self.refs.fetchAdd(1, .monotonic);
    if (previous >= refs_max) @panic("RcBuffer: reference count overflow");
    assert(previous > 0); // Cloning a released buffer.
    return self;
}

/// Gives up this reference; the last one frees the buffer.
pub fn release(self: *RcBuffer) void {
    // Release: this holder's uses happen before the decrement.
    const previous = self.refs.fetchSub(1, .release);
    assert(previous > 0); // Released twice.
    if (previous != 1) return;
    // Acquire (in place of Arc's fence): synchronises with every earlier decrement.
    const now = self.refs.load(.acquire);
    assert(now == 0);
    const allocator = self.allocator;
    const base: [*]align(alignment.toByteUnits()) u8 = @ptrCast(self);
    allocator.free(base[0 .. header_size + self.len]);
}

pub fn bytes(self: *const RcBuffer) []const u8 {
    const base: [*]const u8 = @ptrCast(self);
    return base[header_size..][0..self.len];
}

/// Writable bytes; only while the caller holds the only reference.
pub fn bytesMut(self: *RcBuffer) []u8 {
    assert(self.refs.load(.monotonic) == 1);
    const base: [*]u8 = @ptrCast(self);
    return base[header_size..][0..self.len];
}

/// Current number of references (a snapshot, for tests and assertions).
pub fn refCount(self: *const RcBuffer) usize {
    return self.refs.load(.acquire);
}

test "create, clone, release frees once" {
    const buffer = try RcBuffer.init(std.testing.allocator, "hello");
    try std.testing.expectEqualStrings("hello", buffer.bytes());
    const second = buffer.clone();
    try std.testing.expectEqual(@as(usize, 2), buffer.refCount());
    try std.testing.expect(second == buffer);
    buffer.release();
    try std.testing.expectEqualStrings("hello", second.bytes());
    second.release(); // The testing allocator reports a leak or a double free.
}

test "empty and large buffers" {
    const empty = try RcBuffer.create(std.testing.allocator, 0);
    try std.testing.expectEqual(@as(usize, 0), empty.bytes().len);
    empty.release();
    const large = try RcBuffer.create(std.testing.allocator, 1 << 20);
    @memset(large.bytesMut(), 0xab);
    try std.testing.expectEqual(@as(u8, 0xab), large.bytes()[(1 << 20) - 1]);
    large.release();
}

test "clone and release from many threads" {
    const testing_support = @import("testing.zig");
    const thread_count = 4;
    const rounds = testing_support.scaled(100_000, 50);
    const buffer = try RcBuffer.init(std.testing.allocator, "shared payload");
    const Worker = struct {
        fn run(shared: *RcBuffer, count: usize) void {
            for (0..count) |i| {
                const copy = shared.clone();
                assert(copy.bytes()[0] == 's');
                if (i % 3 == 0) {
                    const another = copy.clone();
                    another.release();
                }
                copy.release();
            }
        }
    };
    var threads: [thread_count]std.Thread = undefined;
    // Each thread gets its own reference, released by the thread at the end.
    const Holder = struct {
        fn run(mine: *RcBuffer, count: usize) void {
            Worker.run(mine, count);
            mine.release();
        }
    };
    for (&threads) |*t| t.* = try std.Thread.spawn(.{}, Holder.run, .{ buffer.clone(), rounds });
    buffer.release(); // The threads' references keep it alive; the last one frees it.
    for (threads) |t| t.join();
}

test "clone and release allocate nothing" {
    const CountingAllocator = @import("CountingAllocator.zig");
    var counting = CountingAllocator.init(std.testing.allocator);
    const buffer = try RcBuffer.create(counting.allocator(), 64);
    counting.reset();
    for (0..1000) |_| {
        const copy = buffer.clone();
        copy.release();
    }
    try std.testing.expectEqual(@as(u64, 0), counting.snapshot().count);
    buffer.release();
}
