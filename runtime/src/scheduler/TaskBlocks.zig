//! A worker's cache of task blocks: fixed-size memory blocks for fiber tasks, kept on a LIFO
//! free list when a task is freed on a worker and handed out again by the next spawn on it.
//!
//! ## Why
//!
//! A std.Io `concurrent` (or `Group.concurrent`) allocates one block per fiber: the task, the
//! copied context and the result. Through a general-purpose allocator that is a `malloc` and a
//! `free` per spawn, plus whatever the allocator's caller wraps around it (the benchmarks'
//! counting allocator: three atomic adds per allocation). The io suite's spawn-heavy rows
//! (io_spawn_group, io_fan_in, io_fan_out: 1,000 fibers per iteration) spent a quarter of
//! their time there. The peer zio pools its task memory for the same reason.
//!
//! ## Rules
//!
//! - One cache per worker, touched only by that worker's thread (and by `deinit`, after the
//!   workers have exited): no atomics and no lock. `Worker.allocTaskBlock` and
//!   `Worker.freeTaskBlock` pick the cache (this file imports no scheduler code, so that
//!   `Shared` can hold the return lists). Only workers make blocks: a task created on
//!   any other thread (a blocking-pool task, a spawn from `blockOn`'s thread) is allocated at
//!   its exact size. A block freed on a thread that is not one of the runtime's workers (a
//!   blocking thread, a thread that dropped the last waker after the runtime stopped) goes
//!   back to the allocator.
//! - **Blocks freed elsewhere.** A block remembers its home, the worker that took it
//!   (`Header.block_home`). A worker that frees a block of another home pushes it onto the
//!   home's return list (`Shared.Remote.blocks_returned`: a lock-free stack, one
//!   compare-and-swap); the home takes the whole list with one swap when its own cache runs
//!   dry. Without it a spawner on one worker whose tasks finish on another (a worker pool at
//!   2 workers) allocated every block afresh while the other worker's cache filled up and
//!   spilled to the allocator. Orderings: a push publishes the block's link with release; the
//!   home's swap is acquire, so the links it walks are visible. No ABA: pushers only push,
//!   and the only pop is the home's swap of the whole list.
//! - Every block is `block_bytes` long and `block_alignment` aligned, so any block can be
//!   given back to the allocator with the same length and alignment it was allocated with.
//!   Requests that do not fit go to the allocator and are never cached (`fits`).
//! - The cache holds at most `capacity_max` blocks (`capacity_max * block_bytes` bytes per
//!   worker); a free beyond that goes to the allocator, and so does the excess of a return list
//!   taken over. So the memory a runtime holds for finished tasks is bounded by `capacity_max`
//!   per worker plus the blocks in flight on return lists (at most the blocks its tasks held
//!   at once), and a burst of 10,000 fibers does not pin 10,000 blocks.
//! - The allocator sees a block once, when it is first allocated: allocation counts of a
//!   benchmark count cache misses, not spawns (runtime/bench/README.md, "Io suite").

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const TaskBlocks = @This();

/// Large enough for a fiber task with a few words of context and result (the task itself is
/// ~300 bytes; see the test below), small enough that a full cache holds 512 KiB.
pub const block_bytes: usize = 512;
pub const block_alignment: Alignment = .@"64";
pub const capacity_max: u32 = 1024;
/// A block's memory.
pub const Block = [*]align(block_alignment.toByteUnits()) u8;
/// `Header.block_home` of a task that is not in a block.
pub const home_none: u16 = std.math.maxInt(u16);

/// A worker's return list: blocks of that home freed on other workers.
pub const ReturnList = struct {
    head: std.atomic.Value(?*FreeBlock) = .init(null),

    /// Any worker: gives `memory` (a block of this list's home) back.
    pub fn push(self: *ReturnList, memory: Block) void {
        const block: *FreeBlock = @ptrCast(memory);
        var head = self.head.load(.monotonic);
        while (true) {
            block.next = head;
            // Release: the link (and the block's last use by the freeing task) happen before
            // the home's acquire swap.
            head = self.head.cmpxchgWeak(head, block, .release, .monotonic) orelse return;
        }
    }

    /// The home worker: the whole list (null if empty).
    fn takeAll(self: *ReturnList) ?*FreeBlock {
        if (self.head.load(.monotonic) == null) return null;
        return self.head.swap(null, .acquire);
    }
};

const FreeBlock = struct {
    next: ?*FreeBlock,
};

free_list: ?*FreeBlock = null,
count: u32 = 0,

/// Whether a request of `len` bytes aligned to `alignment` is served from blocks.
pub fn fits(len: usize, alignment: Alignment) bool {
    return len <= block_bytes and alignment.compare(.lte, block_alignment);
}

/// A cached block — from the cache, else from the return list taken over — or null (the caller
/// allocates one). The excess of a long return list over `capacity_max` goes to `allocator`.
pub fn popOrReclaim(self: *TaskBlocks, returned: *ReturnList, allocator: Allocator) ?Block {
    if (self.pop()) |block| return block;
    var node = returned.takeAll() orelse return null;
    // Bounded by the blocks this home ever handed out; each is walked once per return.
    while (true) {
        const next = node.next;
        if (!self.push(@ptrCast(@alignCast(node)))) release(allocator, @ptrCast(@alignCast(node)));
        node = next orelse break;
    }
    return self.pop();
}

/// A cached block, or null when the cache is empty.
pub fn pop(self: *TaskBlocks) ?Block {
    const block = self.free_list orelse {
        assert(self.count == 0);
        return null;
    };
    assert(self.count > 0);
    self.free_list = block.next;
    self.count -= 1;
    return @ptrCast(@alignCast(block));
}

/// Caches `memory` (a block), or returns false when the cache is full (the caller frees it).
pub fn push(self: *TaskBlocks, memory: Block) bool {
    if (self.count == capacity_max) return false;
    assert(self.count < capacity_max);
    const block: *FreeBlock = @ptrCast(memory);
    block.* = .{ .next = self.free_list };
    self.free_list = block;
    self.count += 1;
    return true;
}

/// A block from the allocator (a cache miss, or a thread without a cache).
pub fn allocate(allocator: Allocator) ?Block {
    const memory = allocator.rawAlloc(block_bytes, block_alignment, @returnAddress()) orelse return null;
    return @alignCast(memory);
}

pub fn release(allocator: Allocator, memory: Block) void {
    allocator.rawFree(memory[0..block_bytes], block_alignment, @returnAddress());
}

/// A block and its home worker (`Worker.allocTaskBlock`).
pub const Taken = struct { block: Block, home: u16 };

/// Frees the blocks left on a return list (the workers have exited).
pub fn drainReturned(returned: *ReturnList, allocator: Allocator) void {
    var node = returned.takeAll();
    while (node) |current| {
        node = current.next;
        release(allocator, @ptrCast(@alignCast(current)));
    }
}

/// Gives every cached block back to `allocator` (the workers have exited).
pub fn deinit(self: *TaskBlocks, allocator: Allocator) void {
    var freed: u32 = 0;
    while (self.pop()) |memory| : (freed += 1) {
        assert(freed < capacity_max);
        release(allocator, memory);
    }
    assert(self.count == 0 and self.free_list == null);
}

test "LIFO reuse, the bound, and deinit return every block" {
    var counting = @import("../CountingAllocator.zig").init(std.testing.allocator);
    const allocator = counting.allocator();
    var cache = TaskBlocks{};
    try std.testing.expect(cache.pop() == null);

    const first = allocate(allocator).?;
    const second = allocate(allocator).?;
    try std.testing.expect(cache.push(first));
    try std.testing.expect(cache.push(second));
    try std.testing.expectEqual(@as(u32, 2), cache.count);
    try std.testing.expectEqual(second, cache.pop().?); // Most recently freed first.
    try std.testing.expectEqual(first, cache.pop().?);
    try std.testing.expect(cache.pop() == null);

    // Fill to the bound: the next push is refused and the caller frees the block.
    for (0..capacity_max) |_| try std.testing.expect(cache.push(allocate(allocator).?));
    try std.testing.expect(!cache.push(first));
    release(allocator, first);
    release(allocator, second);
    cache.deinit(allocator);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes()); // Nothing leaked.
}

test "fits: size and alignment limits" {
    try std.testing.expect(fits(block_bytes, .@"8"));
    try std.testing.expect(fits(1, block_alignment));
    try std.testing.expect(!fits(block_bytes + 1, .@"8"));
    try std.testing.expect(!fits(64, .fromByteUnits(128)));
}

test "a return list is taken over when the cache runs dry; its excess goes to the allocator" {
    var counting = @import("../CountingAllocator.zig").init(std.testing.allocator);
    const allocator = counting.allocator();
    var cache = TaskBlocks{};
    var returned = ReturnList{};
    try std.testing.expect(cache.popOrReclaim(&returned, allocator) == null);

    // Fill the cache to one below the bound, then return three blocks from "other workers".
    for (0..capacity_max - 1) |_| try std.testing.expect(cache.push(allocate(allocator).?));
    var others: [3]Block = undefined;
    for (&others) |*block| {
        block.* = allocate(allocator).?;
        returned.push(block.*);
    }
    // The cache serves its own blocks first; the return list stays untouched.
    const own = cache.popOrReclaim(&returned, allocator).?;
    try std.testing.expect(returned.head.load(.monotonic) != null);
    release(allocator, own);
    for (0..capacity_max - 2) |_| release(allocator, cache.pop().?);
    try std.testing.expectEqual(@as(u32, 0), cache.count);
    // Dry: the whole list comes over (newest first), and every block is handed out once.
    var seen: usize = 0;
    while (cache.popOrReclaim(&returned, allocator)) |block| : (seen += 1) {
        try std.testing.expect(std.mem.indexOfScalar(Block, &others, block) != null);
        release(allocator, block);
    }
    try std.testing.expectEqual(@as(usize, 3), seen);
    try std.testing.expect(returned.head.load(.monotonic) == null);
    cache.deinit(allocator);
    try std.testing.expectEqual(@as(i64, 0), counting.liveBytes());
}

test "return list under concurrent pushers: every block comes back exactly once" {
    const ampere_testing = @import("../testing.zig");
    const per_thread = ampere_testing.scaled(20_000, 500);
    const threads_count = 3;
    var returned = ReturnList{};
    const allocator = std.heap.page_allocator;
    const blocks = try std.testing.allocator.alloc(Block, per_thread * threads_count);
    defer std.testing.allocator.free(blocks);
    for (blocks) |*block| block.* = allocate(allocator).?;
    defer for (blocks) |block| release(allocator, block);

    const Pusher = struct {
        fn run(list: *ReturnList, mine: []const Block) void {
            for (mine) |block| list.push(block);
        }
    };
    var threads: [threads_count]std.Thread = undefined;
    for (&threads, 0..) |*thread, index| {
        thread.* = try std.Thread.spawn(.{}, Pusher.run, .{ &returned, blocks[index * per_thread ..][0..per_thread] });
    }
    // The home takes the list over while the pushers run.
    const got = try std.testing.allocator.alloc(Block, blocks.len);
    defer std.testing.allocator.free(got);
    var taken: usize = 0;
    while (taken < blocks.len) {
        var node = returned.takeAll();
        if (node == null) std.atomic.spinLoopHint();
        while (node) |current| : (taken += 1) {
            got[taken] = @ptrCast(@alignCast(current));
            node = current.next;
        }
    }
    for (threads) |thread| thread.join();
    try std.testing.expect(returned.head.load(.acquire) == null);
    const lessThan = struct {
        fn f(_: void, a: Block, b: Block) bool {
            return @intFromPtr(a) < @intFromPtr(b);
        }
    }.f;
    std.mem.sort(Block, got, {}, lessThan);
    std.mem.sort(Block, blocks, {}, lessThan);
    try std.testing.expectEqualSlices(Block, blocks, got);
    try std.testing.expectEqual(blocks.len, taken);
}
