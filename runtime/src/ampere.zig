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
/// A reference-counted parker whose wakers may outlive its thread (`blockOn`), and its pool.
pub const SharedParker = @import("SharedParker.zig");
/// The short-critical-section mutex used inside the runtime (spins, then sleeps).
pub const Lock = @import("Lock.zig");
/// The condition variable for `Lock` (the blocking pool's idle threads wait on one).
pub const Condition = @import("Condition.zig");
/// The runtime's OS layer: futex, epoll, eventfd, clocks and sleep over `std.os.linux`.
pub const os = @import("os.zig");
pub const CountingAllocator = @import("CountingAllocator.zig");
pub const testing = @import("testing.zig");

pub const Runtime = @import("Runtime.zig");
/// Fibers: tasks with a stack of their own (`Runtime.spawnFiber`, `fiber.await`).
pub const fiber = @import("fiber.zig");
/// The `std.Io` implementation on fibers (`Runtime.io()`; not `io`, the epoll driver).
pub const Io = @import("Io.zig");
pub const task = @import("task.zig");
pub const time = @import("time.zig");
pub const JoinHandle = task.JoinHandle;
pub const JoinError = task.JoinError;
pub const JoinOutput = task.JoinOutput;

const combinators = @import("task/combinators.zig");
pub const join = combinators.join;
pub const select = combinators.select;
pub const selectBiased = combinators.selectBiased;
pub const joinAll = combinators.joinAll;
pub const Join = combinators.Join;
pub const Select = combinators.Select;
pub const SelectBiased = combinators.SelectBiased;
pub const JoinAll = combinators.JoinAll;

/// Spawns `f` on the runtime of the calling thread (a task, `blockOn` or a blocking thread).
pub fn spawn(f: anytype) Runtime.SpawnError!JoinHandle(future.OutputOf(@TypeOf(f))) {
    const rt = Runtime.current() orelse @panic("ampere.spawn called outside a runtime");
    return rt.spawn(f);
}

/// Runs `function(args...)` on the blocking pool of the calling thread's runtime.
pub fn spawnBlocking(
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) Runtime.SpawnBlockingError!JoinHandle(Runtime.ReturnOf(function)) {
    const rt = Runtime.current() orelse @panic("ampere.spawnBlocking called outside a runtime");
    return rt.spawnBlocking(function, args);
}

pub const sync = @import("sync.zig");
pub const channel = @import("channel.zig");
/// The I/O driver (epoll readiness, `Registration.Op`), for types that build on it.
pub const io = @import("io.zig");
/// TCP: `net.TcpListener`, `net.TcpStream`.
pub const net = @import("net.zig");
pub const wait = @import("wait.zig");
/// A reference-counted immutable byte buffer (the counterpart of Rust's `Arc<Vec<u8>>`).
pub const RcBuffer = @import("RcBuffer.zig");

/// Runs `f` (a pointer to a future) to completion on the calling thread without a runtime,
/// parking the thread between polls. The thread executor used by tests and by `Runtime.blockOn`.
pub const blockOnThread = @import("block_on.zig").blockOnThread;

test {
    std.testing.refAllDecls(@This());
    _ = @import("runtime_tests.zig");
    _ = @import("net/tcp_tests.zig");
    _ = @import("metrics_tests.zig");
    _ = @import("liveness_tests.zig");
    _ = @import("fiber.zig");
    _ = @import("Io.zig");
}
