//! An allocator wrapper that counts every allocation made through it, from any thread.
//!
//! The benchmarks pass one of these to the runtime and to every primitive, so that
//! runtime-internal allocations are counted exactly like Tokio's `#[global_allocator]`
//! wrapper counts them on the Rust side. Counted: each successful `alloc` (count + bytes) and
//! each `remap`/`resize` that grows in place or moves (bytes of the growth, like a `realloc`
//! counted by the Rust wrapper: count + new length). Frees are not counted.
//!
//! Counters are monotonic atomics: they only need to be exact totals read by the thread that
//! resets and reads them between iterations, after the workers have synchronised with it
//! (the benchmark joins its tasks before reading), so `.monotonic` increments suffice.
//!
//! For leak checks in tests, `liveBytes()` is the number of bytes allocated through this
//! allocator and not freed yet (allocations, growths and shrinks, minus frees); `reset` does
//! not change it.

const std = @import("std");
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const CountingAllocator = @This();

inner: Allocator,
bytes: std.atomic.Value(u64) = .init(0),
count: std.atomic.Value(u64) = .init(0),
/// Bytes allocated and not freed (never reset).
live: std.atomic.Value(i64) = .init(0),

pub fn init(inner: Allocator) CountingAllocator {
    return .{ .inner = inner };
}

pub fn allocator(self: *CountingAllocator) Allocator {
    return .{ .ptr = self, .vtable = &vtable };
}

pub const Snapshot = struct { bytes: u64, count: u64 };

pub fn snapshot(self: *const CountingAllocator) Snapshot {
    return .{ .bytes = self.bytes.load(.monotonic), .count = self.count.load(.monotonic) };
}

/// Bytes allocated through this allocator and not freed yet.
pub fn liveBytes(self: *const CountingAllocator) i64 {
    return self.live.load(.monotonic);
}

pub fn reset(self: *CountingAllocator) void {
    self.bytes.store(0, .monotonic);
    self.count.store(0, .monotonic);
}

const vtable = Allocator.VTable{
    .alloc = alloc,
    .resize = resize,
    .remap = remap,
    .free = free,
};

fn from(ctx: *anyopaque) *CountingAllocator {
    return @ptrCast(@alignCast(ctx));
}

fn record(self: *CountingAllocator, len: usize) void {
    _ = self.bytes.fetchAdd(len, .monotonic);
    _ = self.count.fetchAdd(1, .monotonic);
}

fn track(self: *CountingAllocator, new_len: usize, old_len: usize) void {
    _ = self.live.fetchAdd(@as(i64, @intCast(new_len)) - @as(i64, @intCast(old_len)), .monotonic);
}

fn alloc(ctx: *anyopaque, len: usize, alignment: Alignment, ret_addr: usize) ?[*]u8 {
    const self = from(ctx);
    const result = self.inner.rawAlloc(len, alignment, ret_addr) orelse return null;
    self.record(len);
    self.track(len, 0);
    return result;
}

fn resize(ctx: *anyopaque, memory: []u8, alignment: Alignment, new_len: usize, ret_addr: usize) bool {
    const self = from(ctx);
    if (!self.inner.rawResize(memory, alignment, new_len, ret_addr)) return false;
    if (new_len > memory.len) self.record(new_len);
    self.track(new_len, memory.len);
    return true;
}

fn remap(ctx: *anyopaque, memory: []u8, alignment: Alignment, new_len: usize, ret_addr: usize) ?[*]u8 {
    const self = from(ctx);
    const result = self.inner.rawRemap(memory, alignment, new_len, ret_addr) orelse return null;
    if (new_len > memory.len) self.record(new_len);
    self.track(new_len, memory.len);
    return result;
}

fn free(ctx: *anyopaque, memory: []u8, alignment: Alignment, ret_addr: usize) void {
    const self = from(ctx);
    self.inner.rawFree(memory, alignment, ret_addr);
    self.track(0, memory.len);
}

test "counts allocations and bytes, not frees" {
    var counting = CountingAllocator.init(std.testing.allocator);
    const a = counting.allocator();
    const first = try a.alloc(u8, 100);
    const second = try a.create(u64);
    a.free(first);
    a.destroy(second);
    const snap = counting.snapshot();
    try std.testing.expectEqual(@as(u64, 2), snap.count);
    try std.testing.expectEqual(@as(u64, 108), snap.bytes);
    counting.reset();
    try std.testing.expectEqual(@as(u64, 0), counting.snapshot().count);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes());
    const kept = try a.alloc(u8, 10);
    try std.testing.expectEqual(@as(i64, 10), counting.liveBytes());
    a.free(kept);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes());
}
