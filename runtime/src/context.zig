//! Thread-local runtime context: which runtime the current thread belongs to, and that
//! runtime's timer and I/O drivers.
//!
//! Set by worker threads for their lifetime, by `Runtime.blockOn` for its duration, and by
//! blocking-pool threads; read by `ampere.spawn` (through `Runtime.current`) and by
//! `ampere.time.sleep` (through `driver`), and by `ampere.net` when it creates a socket
//! (through `io`: sockets register with the I/O driver of the runtime they are created on).
//!
//! This module is a leaf of the import graph: it imports no part of the scheduler. The runtime
//! is stored as an opaque pointer and `Runtime.current()` restores its type, so the scheduler
//! (which enters the context on its threads) and the runtime (which owns the scheduler) do not
//! import each other through this file. Whether the thread is one of a runtime's *workers* is
//! the scheduler's own business (`Worker.current()`).

const Driver = @import("time/Driver.zig");
const IoDriver = @import("io/Driver.zig");

/// What a thread of a runtime can reach without knowing the runtime's type.
pub const Handles = struct {
    /// The `Runtime`, type-erased (see the module comment).
    runtime: *anyopaque,
    driver: *Driver,
    io: *IoDriver,
};

threadlocal var current: ?Handles = null;

/// The runtime of the calling thread, type-erased; `Runtime.current()` is the typed accessor.
pub fn runtime() ?*anyopaque {
    const handles = current orelse return null;
    return handles.runtime;
}

/// The timer driver of the calling thread's runtime.
pub fn driver() ?*Driver {
    const handles = current orelse return null;
    return handles.driver;
}

/// The I/O driver of the calling thread's runtime.
pub fn io() ?*IoDriver {
    const handles = current orelse return null;
    return handles.io;
}

pub const Saved = struct {
    handles: ?Handles,

    pub fn restore(self: Saved) void {
        current = self.handles;
    }
};

/// Enters a runtime (or leaves every runtime with null); returns what to restore on exit.
pub fn enter(handles: ?Handles) Saved {
    const saved = Saved{ .handles = current };
    current = handles;
    return saved;
}

test "enter and restore nest" {
    const std = @import("std");
    var a: u8 = 0;
    var b: u8 = 0;
    var driver_a: Driver = undefined;
    var io_a: IoDriver = undefined;
    try std.testing.expect(runtime() == null);
    const outer = enter(.{ .runtime = &a, .driver = &driver_a, .io = &io_a });
    try std.testing.expect(runtime().? == @as(*anyopaque, &a));
    const inner = enter(.{ .runtime = &b, .driver = &driver_a, .io = &io_a });
    try std.testing.expect(runtime().? == @as(*anyopaque, &b));
    inner.restore();
    try std.testing.expect(runtime().? == @as(*anyopaque, &a));
    try std.testing.expect(driver().? == &driver_a);
    try std.testing.expect(io().? == &io_a);
    outer.restore();
    try std.testing.expect(runtime() == null and driver() == null and io() == null);
}
