//! Channels: Bounded (MPMC, Vyukov ring), Oneshot, Broadcast, Watch. Buffers are allocated
//! once at `init`; sending and receiving never allocate. See runtime/docs/channel.md.

const std = @import("std");

pub const Bounded = @import("channel/bounded.zig").Bounded;
pub const Oneshot = @import("channel/oneshot.zig").Oneshot;
pub const Broadcast = @import("channel/broadcast.zig").Broadcast;
pub const Watch = @import("channel/watch.zig").Watch;

test {
    std.testing.refAllDecls(@This());
    _ = @import("channel/WaitQueue.zig");
    _ = @import("channel/common.zig");
    _ = @import("channel/bounded.zig");
    _ = @import("channel/oneshot.zig");
    _ = @import("channel/broadcast.zig");
    _ = @import("channel/watch.zig");
    _ = @import("channel/stress_tests.zig");
    _ = @import("channel/runtime_stress_tests.zig");
    // RcBuffer is not a channel; it is tested from here until ampere.zig exports it.
    _ = @import("RcBuffer.zig");
}
