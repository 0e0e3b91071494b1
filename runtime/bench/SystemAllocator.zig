//! glibc malloc, called exactly the way Rust's `std::alloc::System` calls it on Linux — the
//! allocator under the Tokio side's counting `#[global_allocator]` — so both benchmark
//! programs make the same libc calls for the same requests:
//!
//! - allocate: `malloc(len)` when the alignment is at most 16 (glibc's guarantee) and at most
//!   `len`; otherwise `posix_memalign(max(alignment, pointer size), len)`;
//! - grow or shrink with a move allowed (Zig's `remap`, Rust's `realloc`): `realloc` under the
//!   same condition; otherwise refuse, and the caller allocates, copies and frees (Rust's
//!   fallback does the same);
//! - grow in place (Zig's `resize`, which Rust has no equivalent of): only a shrink, which
//!   keeps the block;
//! - free: `free`.
//!
//! `std.heap.c_allocator` would differ (Zig 0.16.0): it grows a request below 16 bytes to 16,
//! and its `resize` and `remap` grow in place up to `malloc_usable_size`, which Rust never does.

const std = @import("std");
const c = std.c;
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

/// glibc's malloc alignment on 64-bit targets (Rust's `MIN_ALIGN`).
const malloc_alignment: usize = 16;

pub const allocator: Allocator = .{ .ptr = undefined, .vtable = &vtable };

const vtable = Allocator.VTable{
    .alloc = alloc,
    .resize = resize,
    .remap = remap,
    .free = free,
};

fn mallocSuffices(alignment: Alignment, len: usize) bool {
    const bytes = alignment.toByteUnits();
    return bytes <= malloc_alignment and bytes <= len;
}

fn alloc(_: *anyopaque, len: usize, alignment: Alignment, _: usize) ?[*]u8 {
    std.debug.assert(len > 0);
    if (mallocSuffices(alignment, len)) return @ptrCast(c.malloc(len));
    var result: ?*anyopaque = null;
    const effective = @max(alignment.toByteUnits(), @sizeOf(usize));
    if (c.posix_memalign(&result, effective, len) != 0) return null;
    return @ptrCast(result);
}

fn resize(_: *anyopaque, memory: []u8, _: Alignment, new_len: usize, _: usize) bool {
    return new_len <= memory.len;
}

fn remap(_: *anyopaque, memory: []u8, alignment: Alignment, new_len: usize, _: usize) ?[*]u8 {
    if (new_len <= memory.len) return memory.ptr;
    if (!mallocSuffices(alignment, new_len)) return null;
    return @ptrCast(c.realloc(memory.ptr, new_len));
}

fn free(_: *anyopaque, memory: []u8, _: Alignment, _: usize) void {
    c.free(memory.ptr);
}

test "allocations of every alignment, growth by realloc, free" {
    const a = allocator;
    const small = try a.alloc(u8, 3); // alignment 1: malloc
    defer a.free(small);
    const wide = try a.alignedAlloc(u8, .fromByteUnits(64), 100); // posix_memalign
    defer a.free(wide);
    try std.testing.expect(@intFromPtr(wide.ptr) % 64 == 0);
    var list: std.ArrayList(u64) = .empty;
    defer list.deinit(a);
    for (0..10_000) |i| try list.append(a, i); // grows through remap (realloc)
    try std.testing.expectEqual(@as(u64, 9_999), list.items[9_999]);
}
