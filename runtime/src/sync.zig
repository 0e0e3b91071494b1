//! Synchronisation primitives: Semaphore (Tokio's batch semaphore), Mutex and RwLock built on
//! it, OnceCell, Notify, Barrier. Each has a synchronous `try*` fast path that needs no runtime
//! and an async path returning a future whose waiter node lives inside the future.

const std = @import("std");

test {
    std.testing.refAllDecls(@This());
}
