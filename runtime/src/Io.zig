//! `ampere.Io`: the `std.Io` interface on Ampere's scheduler (runtime/docs/fibers.md).
//!
//! `Runtime.io()` returns a `std.Io` whose userdata is the runtime's `ampere.Io`. Code written
//! against `std.Io` alone — std's networking, files, `std.http`, any library — then runs on
//! fibers: `io.async`/`io.concurrent` spawn a fiber on the same work-stealing scheduler, timer
//! wheel and epoll driver as Ampere's state-machine tasks, and every std.Io function that waits
//! suspends the calling fiber, not its worker.
//!
//! (Naming: `ampere.io` — lowercase — is the epoll driver's namespace, `src/io/`; this type is
//! `ampere.Io`, like `std.Io`, and its parts live in `src/std_io/`.)
//!
//! ## Who may call
//!
//! Any fiber of the runtime, and any thread that is not one of its workers (`main` before or
//! around `Runtime.blockOn`, a blocking-pool function): there a waiting function blocks the
//! thread, as `Runtime.blockOn` does. A state-machine task's `poll` must not call a function
//! that waits — it would block a worker (`blockOn`'s assertion catches it).
//!
//! ## The vtable (runtime/docs/fibers.md has the whole table)
//!
//! | functions | where | what happens on Ampere |
//! |---|---|---|
//! | async, concurrent, await, cancel, group*, recancel, swapCancelProtection, checkCancel | `std_io/tasks.zig` | fibers; std.Io's cancellation rules |
//! | futexWait, futexWaitUncancelable, futexWake | `std_io/Futex.zig`, `std_io/clock.zig` | a parking table: the fiber is suspended |
//! | now, clockResolution, sleep, random, randomSecure | `std_io/clock.zig` | the timer wheel; clock_gettime; getrandom |
//! | net*, operate(.net_receive) | `std_io/net.zig` | sockets on the runtime's epoll driver |
//! | batch* | `std_io/batch.zig` | receives on epoll, file operations on the blocking pool |
//! | fileClose, lockStderr & co., netLookup | `std_io/files.zig` | see there |
//! | the other file, directory and process functions | `std_io/delegate.zig`, `offload` | std.Io.Threaded's implementation on the blocking pool (`direct_names`: on the calling thread) |

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const Runtime = @import("Runtime.zig");
const future = @import("future.zig");
const Fiber = @import("fiber/Fiber.zig");
const Futex = @import("std_io/Futex.zig");
const tasks = @import("std_io/tasks.zig");
const clock = @import("std_io/clock.zig");
const delegate = @import("std_io/delegate.zig");
const block_on = @import("block_on.zig");
const JoinHandle = @import("task/join_handle.zig").JoinHandle;
const JoinOutput = @import("task/cell.zig").JoinOutput;
const net = @import("std_io/net.zig");
const files = @import("std_io/files.zig");
const batch = @import("std_io/batch.zig");

const AmpereIo = @This();

runtime: *Runtime,
futex: Futex,
/// Descriptor -> I/O driver registration of the sockets this Io created (`std_io/net.zig`).
sockets: net.Sockets,
/// `lockStderr`'s lock and writer (`std_io/files.zig`).
stderr: files.Stderr = .{},
/// The implementation of the blocking system calls (files, directories, processes), called on
/// the blocking pool (`delegate.zig`). Built without its thread pool and without installing
/// signal handlers: only its system-call wrappers are used.
threaded: std.Io.Threaded,

pub const Options = struct {
    /// The process environment, for process spawning (PATH) and terminal detection.
    environ: std.process.Environ = .empty,
};

pub fn create(runtime: *Runtime, allocator: Allocator, options: Options) Allocator.Error!*AmpereIo {
    const self = try allocator.create(AmpereIo);
    var threaded = std.Io.Threaded.init_single_threaded;
    threaded.allocator = allocator;
    threaded.environ = .{ .process_environ = options.environ };
    threaded.environ_initialized = options.environ.block.isEmpty();
    self.* = .{
        .runtime = runtime,
        .futex = Futex.init(),
        .sockets = net.Sockets.init(allocator),
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
    return .{ .userdata = self, .vtable = &vtable };
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
    return self.runtime.blockOn(f);
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
    const fiber = Fiber.current() orelse return delegate.callThreaded(self, name, args);
    if (comptime hasCanceled(R)) {
        if (fiber.takeCancel()) return error.Canceled;
    }
    const Job = struct {
        fn run(io_state: *AmpereIo, job_args: @TypeOf(args)) R {
            return delegate.callThreaded(io_state, name, job_args);
        }
    };
    const handle = self.runtime.spawnBlocking(Job.run, .{ self, args }) catch
        return delegate.callThreaded(self, name, args);
    var wait = OffloadWait(R){ .handle = handle };
    const output = fiber.awaitFuture(&wait);
    if (@typeInfo(R) == .error_union) {
        return output catch |err| switch (err) {
            error.Cancelled => delegate.callThreaded(self, name, args), // Never started (shutdown).
            else => |e| e,
        };
    }
    return output catch delegate.callThreaded(self, name, args);
}

/// The wait for an offloaded call. Killed (runtime shutdown, abort) while the call runs, it
/// waits for the call on the killing thread: the call may be reading or writing the fiber's
/// memory (a buffer, a path on its stack), which must not be reused before it returns.
pub fn OffloadWait(comptime T: type) type {
    return struct {
        const Self = @This();
        pub const Output = JoinOutput(T);
        handle: JoinHandle(T),

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            return self.handle.poll(cx);
        }

        pub fn cancel(self: *Self) void {
            if (self.handle.raw == null) return;
            if (block_on.blockOnThread(&self.handle)) |_| {} else |_| {}
        }
    };
}

fn operate(userdata: ?*anyopaque, operation: std.Io.Operation) std.Io.Cancelable!std.Io.Operation.Result {
    const self = fromUserdata(userdata);
    switch (operation) {
        .net_receive => |o| return .{ .net_receive = try net.receive(self, o) },
        // Files, pipes, terminals: their read or write on the blocking pool.
        .file_read_streaming, .file_write_streaming, .device_io_control => return self.offload("operate", .{operation}),
    }
}

/// Threaded's implementation on the calling thread: calls that never block.
const direct_names = [_][]const u8{
    "dirClose",                 "fileSeekBy",                  "fileSeekTo",
    "fileMemoryMapDestroy",     "fileIsTty",                   "fileEnableAnsiEscapeCodes",
    "fileSupportsAnsiEscapeCodes", "processExecutablePath",    "processCurrentPath",
    "processSetCurrentDir",     "processSetCurrentPath",       "processReplace",
    "processReplacePath",       "progressParentFile",          "netInterfaceNameResolve",
    "netInterfaceName",
};

fn isDirect(comptime name: []const u8) bool {
    for (direct_names) |direct| {
        if (std.mem.eql(u8, direct, name)) return true;
    }
    return false;
}

/// This file's own implementations (every other function goes to Threaded: `direct_names` on
/// the calling thread, the rest on the blocking pool).
const own = .{
    .crashHandler = tasks.crashHandler,
    .async = tasks.async,
    .concurrent = tasks.concurrent,
    .await = tasks.await,
    .cancel = tasks.cancel,
    .groupAsync = tasks.groupAsync,
    .groupConcurrent = tasks.groupConcurrent,
    .groupAwait = tasks.groupAwait,
    .groupCancel = tasks.groupCancel,
    .recancel = tasks.recancel,
    .swapCancelProtection = tasks.swapCancelProtection,
    .checkCancel = tasks.checkCancel,
    .futexWait = clock.futexWait,
    .futexWaitUncancelable = clock.futexWaitUncancelable,
    .futexWake = clock.futexWake,
    .now = clock.now,
    .clockResolution = clock.clockResolution,
    .sleep = clock.sleep,
    .random = clock.random,
    .randomSecure = clock.randomSecure,
    .operate = operate,
    .batchAwaitAsync = batch.batchAwaitAsync,
    .batchAwaitConcurrent = batch.batchAwaitConcurrent,
    .batchCancel = batch.batchCancel,
    .fileClose = files.fileClose,
    .lockStderr = files.lockStderr,
    .tryLockStderr = files.tryLockStderr,
    .unlockStderr = files.unlockStderr,
    .netLookup = files.netLookup,
    .netListenIp = net.netListenIp,
    .netAccept = net.netAccept,
    .netBindIp = net.netBindIp,
    .netConnectIp = net.netConnectIp,
    .netListenUnix = net.netListenUnix,
    .netConnectUnix = net.netConnectUnix,
    .netSocketCreatePair = net.netSocketCreatePair,
    .netSend = net.netSend,
    .netRead = net.netRead,
    .netWrite = net.netWrite,
    .netWriteFile = net.netWriteFile,
    .netClose = net.netClose,
    .netShutdown = net.netShutdown,
};

pub const vtable: std.Io.VTable = blk: {
    @setEvalBranchQuota(100_000);
    var table: std.Io.VTable = undefined;
    for (@typeInfo(std.Io.VTable).@"struct".fields) |field| {
        @field(table, field.name) = if (@hasField(@TypeOf(own), field.name))
            @field(own, field.name)
        else
            delegate.forwarder(field.name, if (isDirect(field.name)) .direct else .offload);
    }
    break :blk table;
};

test {
    _ = Futex;
    _ = @import("std_io/std_io_tests.zig");
    _ = @import("std_io/net_tests.zig");
    _ = @import("std_io/files_tests.zig");
    _ = @import("std_io/differential_tests.zig");
}
