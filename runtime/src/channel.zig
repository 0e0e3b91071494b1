//! Channels: Bounded (MPMC, Vyukov ring), Oneshot, OwnedOneshot, Broadcast, Watch, each used
//! through a counted `Sender` and `Receiver` with the semantics of the Tokio type it is
//! compared with. Bounded, OwnedOneshot, Broadcast and Watch allocate their shared state once
//! at `init` (freed by the last handle); Oneshot's state lives where the caller puts it (no
//! allocation, but it must outlive both halves). Sending, receiving and cloning or dropping
//! handles never allocate. See runtime/docs/channel.md ("Which oneshot").

const std = @import("std");

pub const Bounded = @import("channel/bounded.zig").Bounded;
pub const Oneshot = @import("channel/oneshot.zig").Oneshot;
pub const OwnedOneshot = @import("channel/owned_oneshot.zig").OwnedOneshot;
pub const Broadcast = @import("channel/broadcast.zig").Broadcast;
pub const Watch = @import("channel/watch.zig").Watch;

test {
    std.testing.refAllDecls(@This());
    _ = @import("channel/WaitQueue.zig");
    _ = @import("channel/common.zig");
    _ = @import("channel/bounded.zig");
    _ = @import("channel/oneshot.zig");
    _ = @import("channel/owned_oneshot.zig");
    _ = @import("channel/broadcast.zig");
    _ = @import("channel/watch.zig");
    _ = @import("channel/stress_tests.zig");
    _ = @import("channel/runtime_stress_tests.zig");
    // RcBuffer is not a channel; it is tested from here until ampere.zig exports it.
    _ = @import("RcBuffer.zig");
}
