//! Descriptor -> registration, for the sockets of one `ampere.Io` (`std_io/net.zig` uses it;
//! `State.zig` holds one): chunks of atomic slots allocated on first use, looked up without a
//! lock.

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;
const Lock = @import("../Lock.zig");
const ScheduledIo = @import("../io/ScheduledIo.zig");

const Sockets = @This();

chunks: [chunk_count]std.atomic.Value(?*Chunk) = @splat(.init(null)),
/// Serialises allocating chunks.
chunk_lock: Lock = .{},
/// Serialises registering descriptors this Io did not create (`registrationOf`).
foreign_lock: Lock = .{},
allocator: std.mem.Allocator,

const chunk_len = 4096;
const chunk_count = 1024;
const Chunk = [chunk_len]std.atomic.Value(?*ScheduledIo);
/// Descriptors at or above this cannot be registered (`SystemResources`).
pub const fd_limit: usize = chunk_len * chunk_count;

pub fn init(allocator: std.mem.Allocator) Sockets {
    return .{ .allocator = allocator };
}

pub fn deinit(self: *Sockets) void {
    for (&self.chunks) |*chunk_slot| {
        if (chunk_slot.load(.acquire)) |chunk| self.allocator.destroy(chunk);
    }
}

pub fn slot(self: *Sockets, fd: posix.fd_t) ?*std.atomic.Value(?*ScheduledIo) {
    const index: usize = @intCast(fd);
    if (index >= fd_limit) return null;
    // Acquire: a chunk published by another thread is initialised.
    const chunk = self.chunks[index / chunk_len].load(.acquire) orelse return null;
    return &chunk[index % chunk_len];
}

/// The registration of `fd`, if this Io registered it.
pub fn lookup(self: *Sockets, fd: posix.fd_t) ?*ScheduledIo {
    const entry = self.slot(fd) orelse return null;
    // Acquire: pairs with the release in `insert` (the ScheduledIo is initialised).
    return entry.load(.acquire);
}

/// The (empty) slot of `fd`, allocating its chunk. Fails for a descriptor beyond
/// `fd_limit` or without memory; nothing is changed then.
pub fn reserve(self: *Sockets, fd: posix.fd_t) error{SystemResources}!*std.atomic.Value(?*ScheduledIo) {
    const index: usize = @intCast(fd);
    if (index >= fd_limit) return error.SystemResources;
    const chunk_slot = &self.chunks[index / chunk_len];
    const chunk = chunk_slot.load(.acquire) orelse blk: {
        self.chunk_lock.lock();
        defer self.chunk_lock.unlock();
        if (chunk_slot.load(.acquire)) |existing| break :blk existing;
        const fresh = self.allocator.create(Chunk) catch return error.SystemResources;
        @memset(fresh, .init(null));
        // Release: publishes the initialised chunk to lock-free lookups.
        chunk_slot.store(fresh, .release);
        break :blk fresh;
    };
    // A descriptor number is reused only after close, which removed the old entry.
    assert(chunk[index % chunk_len].load(.monotonic) == null);
    return &chunk[index % chunk_len];
}

pub fn remove(self: *Sockets, fd: posix.fd_t) ?*ScheduledIo {
    const entry = self.slot(fd) orelse return null;
    return entry.swap(null, .acq_rel);
}
