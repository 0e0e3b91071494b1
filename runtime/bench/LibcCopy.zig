//! The payload copy of the echo benchmarks through glibc's `memcpy`, the routine Rust's
//! `Vec::clone`/`String::clone` end up in on the Tokio side.
//!
//! Why not `@memcpy`: in a Zig program the copy goes to the `memcpy` of Zig's own compiler_rt,
//! linked into the binary (a vector loop of plain loads and stores), never to glibc's, even
//! when libc is linked. glibc's (`__memmove_avx*_unaligned_erms`) switches to `rep movsb`
//! from a few KiB on and to non-temporal stores for copies larger than a share of the last
//! level cache. On a 16-core Xeon the echo rows from 8 KiB to 1 MiB came out 0.82–0.94 for
//! ampere (Tokio faster) with the copy being most of the work — a difference of the two
//! harnesses' copy routines, not of the runtimes. Both sides now call the same function.
//!
//! The function is looked up once with `dlsym(RTLD_DEFAULT, "memcpy")`: compiler_rt's copy is
//! a local symbol of the executable, so the dynamic linker finds glibc's (resolving its IFUNC
//! to the CPU's best variant, as the PLT call from Rust does). A plain `extern fn memcpy` would
//! not do: LLVM treats a call to `memcpy` as its intrinsic and links it to compiler_rt.

const std = @import("std");
const Allocator = std.mem.Allocator;

const MemcpyFn = *const fn (dest: ?*anyopaque, src: ?*const anyopaque, len: usize) callconv(.c) ?*anyopaque;

var resolved: std.atomic.Value(?MemcpyFn) = .init(null);

/// glibc's `memcpy` (looked up on first use; the lookup is idempotent, so a race is harmless).
pub fn memcpyFn() MemcpyFn {
    if (resolved.load(.acquire)) |function| return function;
    const symbol = std.c.dlsym(null, "memcpy") orelse @panic("dlsym(RTLD_DEFAULT, \"memcpy\") failed: glibc's memcpy not found");
    const function: MemcpyFn = @ptrCast(@alignCast(symbol));
    resolved.store(function, .release);
    return function;
}

/// Copies `source` into `destination` (same length, not overlapping) with glibc's memcpy.
pub fn copy(destination: []u8, source: []const u8) void {
    std.debug.assert(destination.len == source.len);
    if (source.len == 0) return;
    _ = memcpyFn()(destination.ptr, source.ptr, source.len);
}

/// `allocator.dupe(u8, source)`, copying with glibc's memcpy (Rust's `to_vec`: malloc + memcpy).
pub fn dupe(allocator: Allocator, source: []const u8) Allocator.Error![]u8 {
    const result = try allocator.alloc(u8, source.len);
    copy(result, source);
    return result;
}

const DlInfo = extern struct {
    fname: ?[*:0]const u8,
    fbase: ?*anyopaque,
    sname: ?[*:0]const u8,
    saddr: ?*anyopaque,
};
extern "c" fn dladdr(address: ?*const anyopaque, info: *DlInfo) c_int;

test "dupe copies through glibc's memcpy, not the executable's" {
    var info: DlInfo = undefined;
    try std.testing.expect(dladdr(@ptrCast(memcpyFn()), &info) != 0);
    const library = std.mem.span(info.fname.?);
    try std.testing.expect(std.mem.indexOf(u8, library, "libc.so") != null);
    const source = "an echo payload";
    const copied = try dupe(std.testing.allocator, source);
    defer std.testing.allocator.free(copied);
    try std.testing.expectEqualStrings(source, copied);
    var big: [70_000]u8 = undefined;
    for (&big, 0..) |*byte, i| byte.* = @truncate(i *% 7);
    const big_copy = try dupe(std.testing.allocator, &big);
    defer std.testing.allocator.free(big_copy);
    try std.testing.expectEqualSlices(u8, &big, big_copy);
}
