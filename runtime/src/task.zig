//! Tasks: spawned futures and the helpers to write them.

const std = @import("std");

pub const JoinHandle = @import("task/join_handle.zig").JoinHandle;
pub const JoinError = @import("task/cell.zig").JoinError;
pub const JoinOutput = @import("task/cell.zig").JoinOutput;
pub const YieldNow = @import("task/yield_now.zig").YieldNow;
pub const yieldNow = @import("task/yield_now.zig").yieldNow;
pub const FromFn = @import("task/from_fn.zig").FromFn;
pub const fromFn = @import("task/from_fn.zig").fromFn;
pub const Header = @import("task/Header.zig");

test {
    std.testing.refAllDecls(@This());
    _ = @import("task/combinators.zig");
}
