//! The peer zio (v0.17.0, a lazy package dependency in build.zig.zon) as a `std.Io`: a
//! `zio.Runtime` with `workers` executors (the calling thread is executor 0) and its `io()`.
//! Only its public API is used; none of its code is copied.

const std = @import("std");
const zio = @import("zio");

pub const Instance = struct {
    runtime: *zio.Runtime,

    pub fn init(self: *Instance, gpa: std.mem.Allocator, workers: u64) !void {
        self.runtime = try zio.Runtime.init(gpa, .{ .executors = .exact(@intCast(workers)) });
    }

    pub fn io(self: *Instance) std.Io {
        return self.runtime.io();
    }

    pub fn deinit(self: *Instance) void {
        self.runtime.deinit();
    }
};
