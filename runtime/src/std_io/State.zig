//! The state of one `ampere.Io` (the std.Io of a runtime, `src/Io.zig`, runtime/docs/fibers.md):
//! what the vtable functions of `src/std_io/` share, and how they wait — from a fiber (it
//! suspends) or a thread (it blocks, as `Runtime.blockOn`) — and offload blocking system calls
//! to the runtime's blocking pool.
//!
//! A leaf of the std.Io implementation: it imports none of the vtable's modules and not
//! `Runtime.zig` (the runtime hands it the parts it uses: the scheduler's shared state, the
//! fiber stacks, the `blockOn` parkers, the blocking pool, and the vtable), so the runtime's
//! imports stay acyclic (tests/runtime/test_import_graph.py).

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const future = @import("../future.zig");
const context = @import("../context.zig");
const Fiber = @import("../fiber/Fiber.zig");
const Fibers = @import("../fiber/Fibers.zig");
const Futex = @import("Futex.zig");
const block_on = @import("../block_on.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const JoinOutput = @import("../task/cell.zig").JoinOutput;
const Shared = @import("../scheduler/Shared.zig");
const SharedParker = @import("../SharedParker.zig");
const BlockingPool = @import("../blocking/BlockingPool.zig");
const spawn_blocking = @import("../blocking/spawn.zig");
const Sockets = @import("Sockets.zig");
const Stderr = @import("Stderr.zig");
const hook = @import("../hook.zig");
const Worker = @import("../scheduler/Worker.zig");

pub const wait_in_task_message = "ampere.Io: a waiting std.Io call from a state-machine task's poll would block its worker; call it from a fiber (Runtime.spawnFiber, io.concurrent) or a thread that is not a worker";

const AmpereIo = @This();

/// What the runtime lends its std.Io (`create`).
pub const Parts = struct {
    allocator: Allocator,
    shared: *Shared,
    fibers: *Fibers,
    parkers: *SharedParker.Pool,
    blocking: *BlockingPool,
    vtable: *const std.Io.VTable,
};

allocator: Allocator,
/// The runtime's scheduler state (its queues, timer and I/O drivers).
shared: *Shared,
/// The runtime's fiber stacks.
fibers: *Fibers,
/// The runtime's `blockOn` parkers (a thread that waits blocks on one).
parkers: *SharedParker.Pool,
/// The runtime's blocking pool (`offload`, `spawnBlocking`).
blocking: *BlockingPool,
/// `src/Io.zig`'s vtable (`io`).
vtable: *const std.Io.VTable,
futex: Futex,
/// Descriptor -> I/O driver registration of the sockets this Io created (`std_io/net.zig`).
sockets: Sockets,
/// `lockStderr`'s lock and writer (`std_io/files.zig`).
stderr: Stderr = .{},
/// The implementation of the blocking system calls (files, directories, processes), called on
/// the blocking pool (`delegate.zig`). Built without its thread pool and without installing
/// signal handlers: only its system-call wrappers are used.
threaded: std.Io.Threaded,

pub const Options = struct {
    /// The process environment, for process spawning (PATH) and terminal detection.
    environ: std.process.Environ = .empty,
};

pub fn create(parts: Parts, options: Options) Allocator.Error!*AmpereIo {
    const allocator = parts.allocator;
    const self = try allocator.create(AmpereIo);
    var threaded = std.Io.Threaded.init_single_threaded;
    threaded.allocator = allocator;
    threaded.environ = .{ .process_environ = options.environ };
    threaded.environ_initialized = options.environ.block.isEmpty();
    self.* = .{
        .allocator = allocator,
        .shared = parts.shared,
        .fibers = parts.fibers,
        .parkers = parts.parkers,
        .blocking = parts.blocking,
        .vtable = parts.vtable,
        .futex = Futex.init(),
        .sockets = Sockets.init(allocator),
        .threaded = threaded,
    };
    return self;
}

/// After every fiber finished or was killed.
pub fn destroy(self: *AmpereIo, allocator: Allocator) void {
    self.futex.deinit();
    self.sockets.deinit();
    self.threaded.deinit();
    allocator.destroy(self);
}

pub fn io(self: *AmpereIo) std.Io {
    return .{ .userdata = self, .vtable = self.vtable };
}

pub fn fromUserdata(userdata: ?*anyopaque) *AmpereIo {
    return @ptrCast(@alignCast(userdata.?));
}

// -- waiting from a fiber or a thread ---------------------------------------------------------

/// Waits for the future `f` (by value): suspends the calling fiber, or blocks the calling
/// thread. Not a cancellation point.
pub fn waitUncancelable(self: *AmpereIo, f: anytype) future.OutputOf(@TypeOf(f)) {
    if (Fiber.current()) |fiber| {
        var pinned = f;
        return fiber.awaitFuture(&pinned);
    }
    return self.blockThread(f);
}

/// `waitUncancelable` as a cancellation point (on a fiber; threads are never canceled).
pub fn waitCancelable(self: *AmpereIo, f: anytype) std.Io.Cancelable!future.OutputOf(@TypeOf(f)) {
    if (Fiber.current()) |fiber| {
        var pinned = f;
        return fiber.awaitCancelable(&pinned);
    }
    return self.blockThread(f);
}

/// Runs `f` to completion on the calling thread (which is not a worker: see "Who may call").
pub fn blockThread(self: *AmpereIo, f: anytype) future.OutputOf(@TypeOf(f)) {
    // A worker here is a state-machine task's poll (a fiber never gets here): blocking it
    // would hang every task queued behind it — on one worker, the one that would wake it.
    if (Worker.current() != null) @panic(wait_in_task_message);
    // `Runtime.blockOn` on the runtime's parts.
    const shared = self.shared;
    shared.enterExternalWait();
    defer shared.leaveExternalWait(); // Last: `deinit` may free the runtime after it.
    const saved = context.enter(shared.handles());
    defer saved.restore();
    var pinned = f;
    return block_on.blockOnPool(self.parkers, &pinned, shared.options.spin_before_park_ns, shared.externalRecorder());
}

/// `Runtime.spawnBlocking` on the runtime's parts.
pub fn spawnBlocking(
    self: *AmpereIo,
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) spawn_blocking.Error!JoinHandle(spawn_blocking.ReturnOf(function)) {
    return spawn_blocking.spawn(self.allocator, self.shared, self.blocking, function, args);
}

fn FnOf(comptime name: []const u8) type {
    return @typeInfo(@FieldType(std.Io.VTable, name)).pointer.child;
}

/// Calls the `std.Io.Threaded` instance's `name` with `args` (the arguments after the
/// userdata) on the calling thread.
pub fn callThreaded(self: *AmpereIo, comptime name: []const u8, args: anytype) ReturnOfVTable(name) {
    const threaded = self.threaded.io();
    return @call(.auto, @field(threaded.vtable, name), .{threaded.userdata} ++ args);
}

// -- offloading to the blocking pool ----------------------------------------------------------

fn ReturnOfVTable(comptime name: []const u8) type {
    const F = @typeInfo(@FieldType(std.Io.VTable, name)).pointer.child;
    return @typeInfo(F).@"fn".return_type.?;
}

fn hasCanceled(comptime R: type) bool {
    return switch (@typeInfo(R)) {
        .error_union => |eu| for (@typeInfo(eu.error_set).error_set orelse return false) |e| {
            if (std.mem.eql(u8, e.name, "Canceled")) break true;
        } else false,
        else => false,
    };
}

/// Calls Threaded's `name(args)` on a blocking-pool thread; the calling fiber waits, its
/// worker runs other tasks. A function whose error set has `Canceled` is a cancellation point
/// when it is called; once on the pool it runs to completion (a system call on a file cannot
/// be interrupted reliably), and the fiber waits for it uncancelably. Off a fiber the call
/// runs on the calling thread (see "Who may call"); when the pool refuses work (runtime
/// shutdown) it runs on the calling thread too.
pub fn offload(self: *AmpereIo, comptime name: []const u8, args: anytype) ReturnOfVTable(name) {
    const R = ReturnOfVTable(name);
    const fiber = Fiber.current() orelse return self.callThreaded(name, args);
    if (comptime hasCanceled(R)) {
        if (fiber.takeCancel()) return error.Canceled;
    }
    const Job = struct {
        fn run(io_state: *AmpereIo, job_args: @TypeOf(args)) R {
            return io_state.callThreaded(name, job_args);
        }
    };
    const handle = self.spawnBlocking(Job.run, .{ self, args }) catch
        return self.callThreaded(name, args);
    var wait = OffloadWait(R){ .handle = handle };
    hook.reached(.offload_before_wait);
    const output = fiber.awaitFuture(&wait);
    if (@typeInfo(R) == .error_union) {
        return output catch |err| switch (err) {
            error.Cancelled => self.callThreaded(name, args), // Never started (shutdown).
            else => |e| e,
        };
    }
    return output catch self.callThreaded(name, args);
}

/// The wait for an offloaded call. Killed (runtime shutdown, abort) while the call runs, it
/// waits for the call on the killing thread: the call may be reading or writing the fiber's
/// memory (a buffer, a path on its stack), which must not be reused before it returns. A
/// worker never waits so (`cancelWouldBlock`, fiber/Fiber.zig "Killing"): its kill is put off
/// until the call's completion wakes the fiber's task.
pub fn OffloadWait(comptime T: type) type {
    return struct {
        const Self = @This();
        pub const Output = JoinOutput(T);
        handle: JoinHandle(T),

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            return self.handle.poll(cx);
        }

        /// The call still runs: `cancel` would wait for it.
        pub fn cancelWouldBlock(self: *const Self) bool {
            return !self.handle.isFinished();
        }

        pub fn cancel(self: *Self) void {
            if (self.handle.raw == null) return;
            if (block_on.blockOnThread(&self.handle)) |_| {} else |_| {}
        }
    };
}
