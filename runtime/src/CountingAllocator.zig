//! An allocator wrapper that counts every allocation made through it, from any thread.
//!
//! The benchmarks pass one of these to the runtime and to every primitive, so that
//! runtime-internal allocations are counted exactly like Tokio's `#[global_allocator]`
//! wrapper counts them on the Rust side. Counted: each successful `alloc` (count + bytes) and
//! each `remap`/`resize` that grows in place or moves (bytes of the growth, like a `realloc`
//! counted by the Rust wrapper: count + new length). Frees are not counted.
//!
//! Counting per thread (issue 43): a counter shared by every thread taxes the side that
//! allocates with contended read-modify-writes on one cache line (three atomic adds per
//! allocation here, two on the Rust side: Tokio paid 1.03–1.07× for them). Instead each
//! thread counts into a `Slot` of its own (a cache line): it claims one on its first
//! allocation through this instance (one `fetchAdd` on `next`) and caches it in a
//! thread-local, and from then on adds with a plain load and store (`.monotonic`: no other
//! thread writes its slot). `snapshot` sums the claimed slots and subtracts the baseline that
//! `reset` took; the benchmark reads it after joining every task of the iteration, which orders
//! the workers' stores before its loads. Threads beyond `max_threads` share the `overflow`
//! slot with atomic adds, so nothing is ever lost. The thread-local cache is keyed by the
//! instance's `id` (unique per `init`), so a new instance at an old one's address never
//! reuses a slot it did not hand out. Rust's side does the same (rust_bench/src/alloc.rs).
//!
//! For leak checks in tests, `liveBytes()` is the number of bytes allocated through this
//! allocator and not freed yet (allocations, growths and shrinks, minus frees, summed over
//! the slots); `reset` does not change it.

const std = @import("std");
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const CountingAllocator = @This();

/// Threads with a slot of their own per instance; later ones share `overflow`.
pub const max_threads = 64;

/// One thread's counters. Written only by its owner thread (plain load + store), except
/// `overflow`'s, which every thread beyond `max_threads` updates with atomic adds.
const Slot = struct {
    bytes: std.atomic.Value(u64) align(std.atomic.cache_line) = .init(0),
    count: std.atomic.Value(u64) = .init(0),
    live: std.atomic.Value(i64) = .init(0),

    fn add(self: *Slot, shared: bool, bytes: u64, count: u64) void {
        if (shared) {
            _ = self.bytes.fetchAdd(bytes, .monotonic);
            _ = self.count.fetchAdd(count, .monotonic);
        } else {
            self.bytes.store(self.bytes.load(.monotonic) +% bytes, .monotonic);
            self.count.store(self.count.load(.monotonic) +% count, .monotonic);
        }
    }

    fn addLive(self: *Slot, shared: bool, delta: i64) void {
        if (shared) {
            _ = self.live.fetchAdd(delta, .monotonic);
        } else {
            self.live.store(self.live.load(.monotonic) +% delta, .monotonic);
        }
    }
};

/// Instance ids: the thread-local cache names the instance its slot belongs to.
var next_id: std.atomic.Value(u64) = .init(1);

/// The calling thread's slot of the instance with id `owner` (0: none yet).
threadlocal var cached_owner: u64 = 0;
threadlocal var cached_slot: ?*Slot = null;

inner: Allocator,
id: u64,
slots: [max_threads]Slot = [_]Slot{.{}} ** max_threads,
overflow: Slot = .{},
/// Slots handed out (may exceed `max_threads`: those threads use `overflow`).
next: std.atomic.Value(u32) = .init(0),
/// `snapshot` is measured from these (taken by `reset`).
base_bytes: u64 = 0,
base_count: u64 = 0,

pub fn init(inner: Allocator) CountingAllocator {
    return .{ .inner = inner, .id = next_id.fetchAdd(1, .monotonic) };
}

pub fn allocator(self: *CountingAllocator) Allocator {
    return .{ .ptr = self, .vtable = &vtable };
}

pub const Snapshot = struct { bytes: u64, count: u64 };

fn claimed(self: *const CountingAllocator) usize {
    return @min(self.next.load(.monotonic), max_threads);
}

fn totals(self: *const CountingAllocator) Snapshot {
    var bytes: u64 = self.overflow.bytes.load(.monotonic);
    var count: u64 = self.overflow.count.load(.monotonic);
    for (self.slots[0..self.claimed()]) |*slot| {
        bytes +%= slot.bytes.load(.monotonic);
        count +%= slot.count.load(.monotonic);
    }
    return .{ .bytes = bytes, .count = count };
}

/// Bytes and allocations since the last `reset`, summed over every thread.
pub fn snapshot(self: *const CountingAllocator) Snapshot {
    const now = self.totals();
    return .{ .bytes = now.bytes -% self.base_bytes, .count = now.count -% self.base_count };
}

/// Bytes allocated through this allocator and not freed yet.
pub fn liveBytes(self: *const CountingAllocator) i64 {
    var live: i64 = self.overflow.live.load(.monotonic);
    for (self.slots[0..self.claimed()]) |*slot| live +%= slot.live.load(.monotonic);
    return live;
}

/// Starts a new count: `snapshot` is measured from now. Called by the thread that reads it.
pub fn reset(self: *CountingAllocator) void {
    const now = self.totals();
    self.base_bytes = now.bytes;
    self.base_count = now.count;
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

/// The calling thread's slot, and whether it is the shared `overflow` one.
fn mine(self: *CountingAllocator) struct { slot: *Slot, shared: bool } {
    if (cached_owner == self.id) {
        if (cached_slot) |slot| return .{ .slot = slot, .shared = false };
        return .{ .slot = &self.overflow, .shared = true };
    }
    const index = self.next.fetchAdd(1, .monotonic);
    cached_owner = self.id;
    if (index < max_threads) {
        cached_slot = &self.slots[index];
        return .{ .slot = &self.slots[index], .shared = false };
    }
    cached_slot = null;
    return .{ .slot = &self.overflow, .shared = true };
}

fn record(self: *CountingAllocator, len: usize) void {
    const m = self.mine();
    m.slot.add(m.shared, len, 1);
}

fn track(self: *CountingAllocator, new_len: usize, old_len: usize) void {
    const m = self.mine();
    m.slot.addLive(m.shared, @as(i64, @intCast(new_len)) - @as(i64, @intCast(old_len)));
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
    try std.testing.expectEqual(@as(u64, 1), counting.snapshot().count);
    a.free(kept);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes());
}

test "every thread's allocations are summed after they are joined, overflow threads included" {
    const threads = 8;
    var counting = CountingAllocator.init(std.heap.page_allocator);
    // Fill every slot but 3, so that some of the threads below share the overflow slot.
    counting.next.store(max_threads - 3, .monotonic);
    const Worker = struct {
        fn run(c: *CountingAllocator) void {
            const a = c.allocator();
            for (0..100) |_| {
                const memory = a.alloc(u8, 16) catch unreachable;
                a.free(memory);
            }
        }
    };
    counting.reset();
    var handles: [threads]std.Thread = undefined;
    for (&handles) |*h| h.* = try std.Thread.spawn(.{}, Worker.run, .{&counting});
    for (handles) |h| h.join();
    const snap = counting.snapshot();
    try std.testing.expectEqual(@as(u64, threads * 100), snap.count);
    try std.testing.expectEqual(@as(u64, threads * 100 * 16), snap.bytes);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes());
    try std.testing.expect(counting.overflow.count.load(.monotonic) == (threads - 3) * 100);
}

test "a new instance at an old one's address does not reuse the cached slot" {
    var counting = CountingAllocator.init(std.testing.allocator);
    const memory = try counting.allocator().alloc(u8, 4);
    counting.allocator().free(memory);
    const first_id = counting.id;
    counting = CountingAllocator.init(std.testing.allocator);
    try std.testing.expect(counting.id != first_id);
    const again = try counting.allocator().alloc(u8, 4);
    counting.allocator().free(again);
    try std.testing.expectEqual(@as(u32, 1), counting.next.load(.monotonic)); // a slot of the new instance
    try std.testing.expectEqual(@as(u64, 1), counting.snapshot().count);
}
