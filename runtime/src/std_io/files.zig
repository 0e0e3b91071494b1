//! The std.Io functions around files that need more than forwarding to std.Io.Threaded:
//!
//! - `fileClose`: a file may be a socket this Io registered with the epoll driver (a socket
//!   handed around as a `File`): then it is closed through its registration.
//! - `lockStderr`, `tryLockStderr`, `unlockStderr`: std.Io.Threaded's stderr lock is a mutex
//!   re-entrant per *thread*, which fibers sharing a worker would share. Here it is an
//!   `std.Io.Mutex` on this Io (a waiting fiber suspends), re-entrant per fiber (per thread
//!   off fibers), and the locked writer writes through this Io (on the blocking pool).
//! - `netLookup`: Threaded's resolver (hosts file, DNS over UDP) runs on the blocking pool into
//!   a private queue (std guarantees it never blocks on one of 16 or more entries), then the
//!   results go into the caller's queue through this Io, whose consumer may be a fiber.

const std = @import("std");
const Io = std.Io;
const File = Io.File;
const HostName = Io.net.HostName;

const Fiber = @import("../fiber/Fiber.zig");
const AmpereIo = @import("State.zig");
const net = @import("net.zig");
const delegate = @import("delegate.zig");

pub fn fileClose(userdata: ?*anyopaque, files: []const File) void {
    const self = AmpereIo.fromUserdata(userdata);
    for (files) |file| {
        if (!net.closeIfRegistered(self, file.handle)) delegate.callThreaded(self, "fileClose", .{(&file)[0..1]});
    }
}

// -- stderr ----------------------------------------------------------------------------------

/// The state of `lockStderr` (one per `ampere.Io`).
pub const Stderr = @import("Stderr.zig");

fn ownerId() usize {
    if (Fiber.current()) |fiber| return @intFromPtr(fiber);
    return @as(usize, @as(u32, @bitCast(std.os.linux.gettid()))) | (1 << 63); // Never a fiber address.
}

fn locked(self: *AmpereIo, terminal_mode: ?Io.Terminal.Mode) Io.Cancelable!Io.LockedStderr {
    const state = &self.stderr;
    if (!state.initialized) {
        const io = self.io();
        state.writer.io = io;
        state.initialized = true;
        const environ = self.threaded.environ.process_environ;
        const no_color = environ.getPosix("NO_COLOR") != null;
        const force = environ.getPosix("CLICOLOR_FORCE") != null;
        state.mode = terminal_mode orelse try .detect(io, state.writer.file, no_color, force);
    }
    return .{ .file_writer = &state.writer, .terminal_mode = terminal_mode orelse state.mode };
}

pub fn lockStderr(userdata: ?*anyopaque, terminal_mode: ?Io.Terminal.Mode) Io.Cancelable!Io.LockedStderr {
    const self = AmpereIo.fromUserdata(userdata);
    const state = &self.stderr;
    const me = ownerId();
    if (state.owner.load(.monotonic) != me) {
        try state.mutex.lock(self.io());
        std.debug.assert(state.depth == 0);
        state.owner.store(me, .monotonic);
    }
    state.depth += 1;
    return locked(self, terminal_mode);
}

pub fn tryLockStderr(userdata: ?*anyopaque, terminal_mode: ?Io.Terminal.Mode) Io.Cancelable!?Io.LockedStderr {
    const self = AmpereIo.fromUserdata(userdata);
    const state = &self.stderr;
    const me = ownerId();
    if (state.owner.load(.monotonic) != me) {
        if (!state.mutex.tryLock()) return null;
        std.debug.assert(state.depth == 0);
        state.owner.store(me, .monotonic);
    }
    state.depth += 1;
    return try locked(self, terminal_mode);
}

pub fn unlockStderr(userdata: ?*anyopaque) void {
    const self = AmpereIo.fromUserdata(userdata);
    const state = &self.stderr;
    const writer = &state.writer;
    if (writer.err == null) writer.interface.flush() catch {};
    if (writer.err) |err| {
        if (err == error.Canceled) {
            if (Fiber.current()) |fiber| fiber.recancel();
        }
        writer.err = null;
    }
    writer.interface.end = 0;
    writer.interface.buffer = &.{};
    state.depth -= 1;
    if (state.depth == 0) {
        state.owner.store(0, .monotonic);
        state.mutex.unlock(self.io());
    }
}

// -- host name lookup ------------------------------------------------------------------------

pub fn netLookup(
    userdata: ?*anyopaque,
    host_name: HostName,
    resolved: *Io.Queue(HostName.LookupResult),
    options: HostName.LookupOptions,
) HostName.LookupError!void {
    const self = AmpereIo.fromUserdata(userdata);
    const io = self.io();
    defer resolved.close(io);
    var buffer: [32]HostName.LookupResult = undefined;
    var private = Io.Queue(HostName.LookupResult).init(&buffer);
    // Threaded's resolver closes `private` (with its own Io) before it returns.
    const lookup_result = self.offload("netLookup", .{ host_name, &private, options });
    const threaded = self.threaded.io();
    while (private.getOneUncancelable(threaded)) |result| {
        resolved.putOne(io, result) catch |err| switch (err) {
            error.Canceled => |e| return e,
            error.Closed => unreachable, // Only this function closes `resolved`.
        };
    } else |err| switch (err) {
        error.Closed => {},
    }
    return lookup_result;
}
