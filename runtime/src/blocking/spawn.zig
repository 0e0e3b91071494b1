//! `spawnBlocking` on a runtime's parts: the one recipe behind `Runtime.spawnBlocking` and
//! `ampere.Io`'s offloading (`std_io/State.zig`), which holds the parts, not the `Runtime`.
//!
//! A blocking task is an ordinary task (one allocation, `Cell(FromFn(function))`) in the
//! owned list, queued on the blocking pool instead of a run queue; a worker that hands one off
//! expects the result soon and spins for it when it parks (`Worker.noteBlockingHandOff`).

const std = @import("std");
const Allocator = std.mem.Allocator;

const Cell = @import("../task/cell.zig").Cell;
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const from_fn = @import("../task/from_fn.zig");
const Shared = @import("../scheduler/Shared.zig");
const Worker = @import("../scheduler/Worker.zig");
const BlockingPool = @import("BlockingPool.zig");

pub const Error = Allocator.Error || error{ Shutdown, ThreadSpawn };

pub fn ReturnOf(comptime function: anytype) type {
    return @typeInfo(@TypeOf(function)).@"fn".return_type.?;
}

/// Runs `function(args...)` on `blocking`; returns a JoinHandle of its result.
pub fn spawn(
    allocator: Allocator,
    shared: *Shared,
    blocking: *BlockingPool,
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) Error!JoinHandle(ReturnOf(function)) {
    const F = from_fn.FromFn(function);
    const cell = try Cell(F).create(allocator, .{ .args = args }, &blocking.scheduler, Worker.nextTaskId(shared));
    shared.owned.insert(&cell.header) catch |err| {
        cell.destroyUnsubmitted();
        return err;
    };
    blocking.push(&cell.header) catch |err| {
        shared.owned.remove(&cell.header);
        cell.destroyUnsubmitted();
        return err;
    };
    // The caller will most likely await the result soon: a worker spins for it when it parks.
    if (Worker.currentOf(shared)) |worker| {
        worker.noteBlockingHandOff();
    } else {
        shared.externalRecorder().count(.blocking_spawns, 1);
    }
    return .{ .raw = &cell.header };
}
