//! A fiber stack: one anonymous mapping, the lowest `guard_bytes` of it inaccessible
//! (PROT_NONE), the rest readable and writable. Stacks grow down, so a fiber that runs off the
//! end of its stack touches the guard region and faults; `overflow.zig` recognises the fault
//! and ends the process with a message naming a fiber stack overflow.
//!
//!     base                    usable_low                                     top
//!     | guard (PROT_NONE)     | stack (read/write, pages committed on touch)  |
//!
//! The mapping is `MAP_NORESERVE`: reserving a stack costs address space only; a page costs
//! memory when the fiber first touches it (a fiber that only ever used 8 KiB holds 8 KiB).
//! Each stack is two kernel mappings (VMAs: the guard and the stack), and Linux limits a
//! process to `vm.max_map_count` of them (65,530 by default): about 32,000 stacks alive at once.
//! Beyond that `map` fails with `OutOfMemory`, which `concurrent` reports as
//! `ConcurrencyUnavailable`.
//!
//! `Pool` keeps released stacks for reuse (LIFO: the most recently used stack is the most
//! likely to be in cache), up to `cached_max`; releasing more unmaps them. A reused stack keeps
//! the pages its previous fibers touched. Every acquire and release goes through one `Lock`:
//! an acquire is a fiber spawn, which also allocates its task and queues it, so the pool is
//! not the hot spot.

const std = @import("std");
const assert = std.debug.assert;
const linux = std.os.linux;
const posix = std.posix;
const Lock = @import("../Lock.zig");

const Stack = @This();

pub const page_bytes = std.heap.page_size_min;

/// The whole mapping, guard included.
memory: []align(page_bytes) u8,
guard_bytes: usize,

pub const MapError = error{OutOfMemory};

/// Maps a stack of `usable_bytes` (rounded up to pages) below a guard of `guard_bytes`.
pub fn map(usable_bytes: usize, guard_bytes: usize) MapError!Stack {
    assert(guard_bytes % page_bytes == 0 and guard_bytes > 0);
    const usable = std.mem.alignForward(usize, usable_bytes, page_bytes);
    assert(usable >= page_bytes);
    const len = usable + guard_bytes;
    const rc = linux.mmap(null, len, .{ .READ = true, .WRITE = true }, .{
        .TYPE = .PRIVATE,
        .ANONYMOUS = true,
        .NORESERVE = true,
        .STACK = true,
    }, -1, 0);
    switch (linux.errno(rc)) {
        .SUCCESS => {},
        .NOMEM, .AGAIN => return error.OutOfMemory,
        else => |err| std.debug.panic("fiber stack mmap: unexpected errno {t}", .{err}),
    }
    const memory: [*]align(page_bytes) u8 = @ptrFromInt(rc);
    const stack = Stack{ .memory = memory[0..len], .guard_bytes = guard_bytes };
    switch (linux.errno(linux.mprotect(memory, guard_bytes, .{}))) {
        .SUCCESS => {},
        // The guard splits the mapping in two: at the map-count limit this fails.
        .NOMEM => {
            stack.unmap();
            return error.OutOfMemory;
        },
        else => |err| std.debug.panic("fiber stack guard mprotect: unexpected errno {t}", .{err}),
    }
    return stack;
}

pub fn unmap(self: Stack) void {
    switch (linux.errno(linux.munmap(self.memory.ptr, self.memory.len))) {
        .SUCCESS => {},
        else => |err| std.debug.panic("fiber stack munmap: unexpected errno {t}", .{err}),
    }
}

/// The highest address (exclusive): a fresh fiber's stack pointer starts here.
pub fn top(self: Stack) usize {
    return @intFromPtr(self.memory.ptr) + self.memory.len;
}

/// The lowest usable address; below it is the guard.
pub fn usableLow(self: Stack) usize {
    return @intFromPtr(self.memory.ptr) + self.guard_bytes;
}

pub fn usableBytes(self: Stack) usize {
    return self.memory.len - self.guard_bytes;
}

/// True if `address` is in the guard region.
pub fn inGuard(self: Stack, address: usize) bool {
    return address >= @intFromPtr(self.memory.ptr) and address < self.usableLow();
}

/// The bytes of the usable part that are resident in memory (`mincore`): the stack memory a
/// fiber actually holds. For tests and measurements.
pub fn residentBytes(self: Stack) usize {
    const pages = self.usableBytes() / page_bytes;
    var resident: usize = 0;
    var vector: [256]u8 = undefined;
    var page: usize = 0;
    while (page < pages) {
        const count = @min(vector.len, pages - page);
        const address: [*]u8 = @ptrFromInt(self.usableLow() + page * page_bytes);
        switch (linux.errno(linux.mincore(address, count * page_bytes, &vector))) {
            .SUCCESS => {},
            else => |err| std.debug.panic("fiber stack mincore: unexpected errno {t}", .{err}),
        }
        for (vector[0..count]) |v| resident += v & 1;
        page += count;
    }
    return resident * page_bytes;
}

/// Stacks of one size, mapped on demand and kept for reuse after release.
pub const Pool = struct {
    lock: Lock = .{},
    /// Released stacks (guarded by `lock`); the link lives in the stack's top bytes.
    free: ?*FreeNode = null,
    free_count: usize = 0,
    cached_max: usize,
    usable_bytes: usize,
    guard_bytes: usize,
    /// Stacks handed out and not released. Monotonic counter: read by leak checks after the
    /// threads that acquire and release have been joined (or for statistics).
    in_use: std.atomic.Value(usize) = .init(0),
    /// Stacks ever mapped by this pool (statistics).
    mapped_total: std.atomic.Value(usize) = .init(0),

    const FreeNode = struct {
        next: ?*FreeNode,
        stack: Stack,
    };

    pub fn init(usable_bytes: usize, guard_bytes: usize, cached_max: usize) Pool {
        assert(usable_bytes >= @sizeOf(FreeNode));
        return .{ .usable_bytes = usable_bytes, .guard_bytes = guard_bytes, .cached_max = cached_max };
    }

    /// Unmaps every cached stack. Every stack must have been released.
    pub fn deinit(self: *Pool) void {
        assert(self.in_use.load(.monotonic) == 0); // A fiber stack leaked.
        while (self.free) |node| {
            self.free = node.next;
            node.stack.unmap();
        }
        self.free_count = 0;
    }

    pub fn acquire(self: *Pool) MapError!Stack {
        if (self.pop()) |stack| {
            _ = self.in_use.fetchAdd(1, .monotonic);
            return stack;
        }
        const stack = try map(self.usable_bytes, self.guard_bytes);
        _ = self.mapped_total.fetchAdd(1, .monotonic);
        _ = self.in_use.fetchAdd(1, .monotonic);
        return stack;
    }

    fn pop(self: *Pool) ?Stack {
        self.lock.lock();
        defer self.lock.unlock();
        const node = self.free orelse return null;
        self.free = node.next;
        self.free_count -= 1;
        return node.stack;
    }

    /// Returns `stack` (no fiber runs on it any more) to the cache, or unmaps it.
    pub fn release(self: *Pool, stack: Stack) void {
        assert(stack.guard_bytes == self.guard_bytes);
        const previous = self.in_use.fetchSub(1, .monotonic);
        assert(previous > 0);
        const cached = blk: {
            self.lock.lock();
            defer self.lock.unlock();
            if (self.free_count >= self.cached_max) break :blk false;
            const node: *FreeNode = @ptrFromInt(std.mem.alignBackward(usize, stack.top() - @sizeOf(FreeNode), @alignOf(FreeNode)));
            node.* = .{ .next = self.free, .stack = stack };
            self.free = node;
            self.free_count += 1;
            break :blk true;
        };
        if (!cached) stack.unmap();
    }

    pub fn inUse(self: *const Pool) usize {
        return self.in_use.load(.monotonic);
    }
};

test "a stack is writable down to its guard, and the guard is where the mapping starts" {
    const stack = try map(64 * 1024, page_bytes);
    defer stack.unmap();
    try std.testing.expectEqual(@as(usize, 64 * 1024), stack.usableBytes());
    const low: [*]u8 = @ptrFromInt(stack.usableLow());
    low[0] = 1; // The lowest usable byte.
    const high: [*]u8 = @ptrFromInt(stack.top() - 1);
    high[0] = 2;
    try std.testing.expect(stack.inGuard(stack.usableLow() - 1));
    try std.testing.expect(!stack.inGuard(stack.usableLow()));
    try std.testing.expectEqual(2 * page_bytes, stack.residentBytes());
}

test "the pool reuses released stacks, caches at most cached_max and unmaps the rest" {
    var pool = Pool.init(16 * 1024, page_bytes, 2);
    defer pool.deinit();
    const a = try pool.acquire();
    const b = try pool.acquire();
    const c = try pool.acquire();
    try std.testing.expectEqual(@as(usize, 3), pool.inUse());
    pool.release(a);
    pool.release(b);
    pool.release(c); // Over the cache limit: unmapped.
    try std.testing.expectEqual(@as(usize, 2), pool.free_count);
    const d = try pool.acquire();
    try std.testing.expectEqual(b.memory.ptr, d.memory.ptr); // LIFO.
    pool.release(d);
    try std.testing.expectEqual(@as(usize, 3), pool.mapped_total.load(.monotonic));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
}
