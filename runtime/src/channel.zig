//! Channels: Bounded (MPMC, Vyukov ring), Oneshot, Broadcast, Watch. Buffers are allocated
//! once at `init`; sending and receiving never allocate.

const std = @import("std");

test {
    std.testing.refAllDecls(@This());
}
