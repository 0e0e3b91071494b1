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

const std = @import("std");
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const CountingAllocator = @This();

inner: Allocator,
bytes: std.atomic.Value(u64) = .init(0),
count: std.atomic.Value(u64) = .init(0),

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

fn alloc(ctx: *anyopaque, len: usize, alignment: Alignment, ret_addr: usize) ?[*]u8 {
    const self = from(ctx);
    const result = self.inner.rawAlloc(len, alignment, ret_addr) orelse return null;
    self.record(len);
    return result;
}

fn resize(ctx: *anyopaque, memory: []u8, alignment: Alignment, new_len: usize, ret_addr: usize) bool {
    const self = from(ctx);
    if (!self.inner.rawResize(memory, alignment, new_len, ret_addr)) return false;
    if (new_len > memory.len) self.record(new_len);
    return true;
}

fn remap(ctx: *anyopaque, memory: []u8, alignment: Alignment, new_len: usize, ret_addr: usize) ?[*]u8 {
    const self = from(ctx);
    const result = self.inner.rawRemap(memory, alignment, new_len, ret_addr) orelse return null;
    if (new_len > memory.len) self.record(new_len);
    return result;
}

fn free(ctx: *anyopaque, memory: []u8, alignment: Alignment, ret_addr: usize) void {
    from(ctx).inner.rawFree(memory, alignment, ret_addr);
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
}
