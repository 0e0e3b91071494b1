//! Ampere: an async runtime after Tokio's design.
//!
//! Futures are poll-based state machines (`future.zig`), woken through `Waker`s. Tasks run on
//! a multi-threaded work-stealing scheduler (`Runtime`), with a blocking pool, timers, sync
//! primitives (`sync`) and channels (`channel`) whose waiters live inside the futures that wait
//! (intrusive lists), so that no operation allocates after construction.
//!
//! See runtime/README.md for the architecture and the invariants that make it correct.

const std = @import("std");

pub const future = @import("future.zig");
pub const Poll = future.Poll;
pub const Context = future.Context;
pub const Waker = @import("Waker.zig");
pub const budget = @import("budget.zig");
pub const Parker = @import("Parker.zig");
pub const CountingAllocator = @import("CountingAllocator.zig");
pub const testing = @import("testing.zig");

pub const sync = @import("sync.zig");
pub const channel = @import("channel.zig");

/// Runs `f` (a pointer to a future) to completion on the calling thread without a runtime,
/// parking the thread between polls. The thread executor used by tests and by `Runtime.blockOn`.
pub const blockOnThread = @import("block_on.zig").blockOnThread;

test {
    std.testing.refAllDeclsRecursive(@This());
}
