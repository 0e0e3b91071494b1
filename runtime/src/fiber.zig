//! Fibers: tasks with a stack of their own, for straight-line code (runtime/docs/fibers.md).
//!
//! A fiber is spawned with `Runtime.spawnFiber(function, args)` (or by std.Io through
//! `Runtime.io()`) and scheduled by the same work-stealing scheduler as state-machine tasks.
//! Inside it, `await(f)` waits for any ampere future — a JoinHandle, a channel receive, a
//! mutex, a sleep, a socket operation — by suspending the fiber, not the thread. A
//! state-machine task awaits a fiber through its JoinHandle.
//!
//!     fn handler(stream: ampere.net.TcpStream) !void {
//!         var buffer: [1024]u8 = undefined;
//!         while (true) {
//!             const n = try ampere.fiber.await(stream.read(&buffer));
//!             if (n == 0) return;
//!             try ampere.fiber.await(stream.writeAll(buffer[0..n]));
//!         }
//!     }

const std = @import("std");
const future = @import("future.zig");
const Runtime = @import("Runtime.zig");
const block_on = @import("block_on.zig");

pub const Fiber = @import("fiber/Fiber.zig");
pub const Stack = @import("fiber/Stack.zig");
pub const Fibers = @import("fiber/Fibers.zig");
pub const task = @import("fiber/task.zig");
pub const arch = @import("fiber/arch.zig");
pub const overflow = @import("fiber/overflow.zig");

/// Whether fibers exist on this target (x86_64 and aarch64).
pub const supported = arch.supported;

/// Waits for the future `f` (taken by value; it is pinned here) and returns its output.
///
/// On a fiber, the fiber suspends until the future's waker fires; the worker runs other tasks
/// meanwhile. On a thread outside the runtime's workers (`main`, a blocking-pool function), the
/// thread blocks as in `Runtime.blockOn`. A state-machine task must not call it: its poll would
/// block a worker (an assertion in `blockOn` catches that).
pub fn await(f: anytype) future.OutputOf(@TypeOf(f)) {
    var pinned = f;
    if (Fiber.current()) |fiber| return fiber.awaitFuture(&pinned);
    if (Runtime.current()) |rt| return rt.blockOn(pinned);
    return block_on.blockOnThread(&pinned);
}

/// The fiber running on the calling thread, if any.
pub fn current() ?*Fiber {
    return Fiber.current();
}

test {
    _ = Fiber;
    _ = Stack;
    _ = task;
    _ = arch;
    _ = @import("fiber/fiber_tests.zig");
}
