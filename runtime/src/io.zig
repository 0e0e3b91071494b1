//! The I/O driver: one edge-triggered epoll instance per runtime, the readiness of every
//! registered descriptor (`ScheduledIo`), and `Registration.Op`, the future behind every
//! socket operation of `ampere.net`. See runtime/docs/io.md.

const std = @import("std");

pub const Ready = @import("io/ready.zig").Ready;
pub const ScheduledIo = @import("io/ScheduledIo.zig");
pub const Driver = @import("io/Driver.zig");
pub const Registration = @import("io/Registration.zig");

test {
    std.testing.refAllDecls(@This());
    _ = @import("io/epoll_fallback_tests.zig");
}
