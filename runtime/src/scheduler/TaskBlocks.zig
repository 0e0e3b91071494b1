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
//!   workers have exited): no atomics and no lock. A block freed on another thread (a blocking
//!   thread, `blockOn`, a thread that dropped the last waker after the runtime stopped) goes
//!   back to the allocator; blocks migrate between workers freely (allocated on one, cached by
//!   whichever frees it).
//! - Every block is `block_bytes` long and `block_alignment` aligned, so any block can be
//!   given back to the allocator with the same length and alignment it was allocated with.
//!   Requests that do not fit go to the allocator and are never cached (`fits`).
//! - The cache holds at most `capacity_max` blocks (`capacity_max * block_bytes` bytes per
//!   worker); a free beyond that goes to the allocator. So the memory a runtime holds for
//!   finished tasks is bounded, and a burst of 10,000 fibers does not pin 10,000 blocks.
//! - The allocator sees a block once, when it is first allocated: allocation counts of a
//!   benchmark count cache misses, not spawns (runtime/bench/README.md, "Io suite").

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const Header = @import("../task/Header.zig");
const Worker = @import("Worker.zig");

const TaskBlocks = @This();

/// Large enough for a fiber task with a few words of context and result (the task itself is
/// ~300 bytes; see the test below), small enough that a full cache holds 512 KiB.
pub const block_bytes: usize = 512;
pub const block_alignment: Alignment = .@"64";
pub const capacity_max: u32 = 1024;
/// A block's memory.
pub const Block = [*]align(block_alignment.toByteUnits()) u8;

const FreeBlock = struct {
    next: ?*FreeBlock,
};

free_list: ?*FreeBlock = null,
count: u32 = 0,

/// Whether a request of `len` bytes aligned to `alignment` is served from blocks.
pub fn fits(len: usize, alignment: Alignment) bool {
    return len <= block_bytes and alignment.compare(.lte, block_alignment);
}

/// A cached block, or null when the cache is empty (the caller allocates one).
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

/// A block for a task of the runtime whose task scheduler is `scheduler`: from the calling
/// worker's cache when the caller is one of its workers and the cache is not empty, else
/// from `allocator`.
pub fn allocFor(scheduler: *const Header.Scheduler, allocator: Allocator) Allocator.Error!Block {
    if (Worker.currentFor(scheduler)) |worker| {
        if (worker.task_blocks.pop()) |block| return block;
    }
    return allocate(allocator) orelse error.OutOfMemory;
}

/// Frees a block of a task of that runtime: into the calling worker's cache when it is one
/// of its workers and the cache has room, else to `allocator`.
pub fn freeFor(scheduler: *const Header.Scheduler, allocator: Allocator, block: Block) void {
    if (Worker.currentFor(scheduler)) |worker| {
        if (worker.task_blocks.push(block)) return;
    }
    release(allocator, block);
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
