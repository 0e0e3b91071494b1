//! Synchronisation primitives: Semaphore (Tokio's batch semaphore), Mutex and RwLock built on
//! it, OnceCell, Notify, Barrier. Each has a synchronous `try*` fast path that needs no runtime
//! and an async path returning a future whose waiter node lives inside the future.
//!
//! Common rules (details and proofs in runtime/docs/sync.md):
//! - No primitive takes an allocator and no operation allocates: waiter nodes are fields of
//!   the futures that wait (`wait/intrusive_list.zig`), wake-ups are batched in a fixed array
//!   (`wait/WakeList.zig`).
//! - Fast paths with no waiters are one or two atomic RMWs on a single state word and never
//!   take a lock. The "has waiters" indication lives in that same word, so a waker and a
//!   waiter can never both miss each other.
//! - Wait lists are protected by a `Lock` (Lock.zig: spins, then sleeps); wakers are woken and dropped only after
//!   it is released. FIFO order everywhere.
//! - Futures follow future.zig: `poll` calls `budget.proceed` first and `budget.refund` when
//!   it returns pending; `cancel` is idempotent, unlinks the waiter and gives back whatever
//!   was already handed to it (permits, a notification, the initializer role).

const std = @import("std");

pub const Semaphore = @import("sync/Semaphore.zig");
pub const Mutex = @import("sync/Mutex.zig");
pub const RwLock = @import("sync/RwLock.zig");
pub const OnceCell = @import("sync/once_cell.zig").OnceCell;
pub const Notify = @import("sync/Notify.zig");
pub const Barrier = @import("sync/Barrier.zig");

/// Building blocks shared with the channels; they live in `wait/` (`ampere.wait`) and stay
/// exported here under their old names.
pub const intrusive_list = @import("wait.zig").intrusive_list;
pub const WakeList = @import("wait.zig").WakeList;

test {
    std.testing.refAllDecls(@This());
    _ = @import("sync/once_cell.zig");
    _ = @import("sync/misuse_tests.zig");
    _ = @import("sync/stress_tests.zig");
    _ = @import("sync/runtime_stress_tests.zig");
}
