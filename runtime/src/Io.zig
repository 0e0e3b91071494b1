//! `ampere.Io`: the `std.Io` interface on Ampere's scheduler (runtime/docs/fibers.md).
//!
//! `Runtime.io()` returns a `std.Io` whose userdata is the runtime's `ampere.Io.State`
//! (`std_io/State.zig`), and whose vtable is `vtable` below. Code written
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
//! that waits — it would block a worker (it panics, saying so: `State.blockThread`).
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

pub const State = @import("std_io/State.zig");
const Futex = @import("std_io/Futex.zig");
const tasks = @import("std_io/tasks.zig");
const clock = @import("std_io/clock.zig");
const delegate = @import("std_io/delegate.zig");
const net = @import("std_io/net.zig");
const files = @import("std_io/files.zig");
const batch = @import("std_io/batch.zig");

const fromUserdata = State.fromUserdata;

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
    "dirClose",                    "fileSeekBy",            "fileSeekTo",
    "fileMemoryMapDestroy",        "fileIsTty",             "fileEnableAnsiEscapeCodes",
    "fileSupportsAnsiEscapeCodes", "processExecutablePath", "processCurrentPath",
    "processSetCurrentDir",        "processSetCurrentPath", "processReplace",
    "processReplacePath",          "progressParentFile",    "netInterfaceNameResolve",
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
    _ = tasks;
    _ = @import("std_io/net_tests.zig");
    _ = @import("std_io/files_tests.zig");
    _ = @import("std_io/differential_tests.zig");
    _ = @import("std_io/explore_tests.zig");
    _ = @import("std_io/contract_tests.zig");
}
