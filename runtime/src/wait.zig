//! Building blocks for waiting without allocation, shared by `sync` and `channel`:
//!
//! - `intrusive_list`: a doubly-linked list of `Node`s embedded in the waiting futures, plus
//!   the `Detached` guard ring that lets a wake-all drop its lock between batches while the
//!   waiters still in the batch can cancel.
//! - `WakeList`: a fixed batch of wakers collected under a lock and woken after it is
//!   released, and `storeWaker`/`replaceWaker`, the way a re-polled future refreshes its
//!   waker.
//!
//! Neither takes a lock of its own: the primitive that owns the list (a `sync` primitive, or
//! `channel/WaitQueue.zig` for the channels) guards it with its mutex and decides the
//! orderings of its own state words.

const std = @import("std");

pub const intrusive_list = @import("wait/intrusive_list.zig");
pub const WakeList = @import("wait/WakeList.zig");

test {
    std.testing.refAllDecls(@This());
}
