//! The runtime's operating-system layer: the few Linux system calls it makes for waiting,
//! waking and time — futex, epoll, eventfd, clocks, sleep — over `std.os.linux` (raw system
//! calls, or the vDSO for the clocks).
//!
//! The runtime is below `std.Io`, not on top of it: an `Io` implementation is something one
//! could build on this runtime, so nothing here (and nothing in the runtime) takes an `Io`.
//! Sockets have their own layer, `net/sys.zig`.
//!
//! Errors. Each function documents what it does with every errno it can get:
//!
//!   - a resource error (descriptor limits, memory) is returned as a Zig error, named as
//!     `std.posix` named them up to Zig 0.15, so callers keep their error sets;
//!   - an errno that only a bug can cause (a bad descriptor, a bad pointer, an invalid
//!     argument the caller fully controls) panics with its name: continuing would act on the
//!     wrong descriptor or memory. The checks cost nothing on the success path;
//!   - `EINTR` (a signal handler ran): a call that waits *returns* to its caller — the futex
//!     and epoll waits report it like a spurious wake-up — so that the caller recomputes its
//!     timeout from its deadline instead of restarting the wait with the old, too long one.
//!     `sleepNs` sleeps to an absolute deadline and resumes it; `close` never retries (on
//!     Linux the descriptor is released even when `close` reports `EINTR`).

const std = @import("std");
const builtin = @import("builtin");
const assert = std.debug.assert;
const linux = std.os.linux;

pub const fd_t = linux.fd_t;
pub const epoll_event = linux.epoll_event;

/// Panics with the name of an errno that only a bug (or a kernel that breaks its contract) can
/// produce.
fn unexpected(comptime call: []const u8, err: linux.E) noreturn {
    @branchHint(.cold);
    std.debug.panic(call ++ " failed: unexpected errno {d} ({s})", .{ @intFromEnum(err), std.enums.tagName(linux.E, err) orelse "?" });
}

fn timespecFromNs(duration_ns: u64) linux.timespec {
    return .{
        .sec = @intCast(duration_ns / std.time.ns_per_s),
        .nsec = @intCast(duration_ns % std.time.ns_per_s),
    };
}

// -- futex ------------------------------------------------------------------------------------

pub const FutexWaitResult = enum {
    /// Returned for a wake, a word that no longer held `expected`, a signal (`EINTR`) or no
    /// reason at all: the caller re-checks its condition and, if it still has to wait,
    /// recomputes the remaining timeout from its own deadline.
    woken,
    /// The timeout elapsed with the word still `expected` and no wake.
    timed_out,
};

/// `FUTEX_WAIT` (process-private): if `word` still holds `expected`, sleeps until a
/// `futexWake` on it, a signal, or `timeout_ns` (null: no limit; relative, CLOCK_MONOTONIC).
/// The comparison and the sleep are atomic with respect to `futexWake`, which is what makes a
/// wake between the caller's last check and this call impossible to lose.
///
/// Errno: `EAGAIN` (the word differs), `EINTR` (a signal handler ran) and success are all
/// `.woken` — callers loop; `ETIMEDOUT` is `.timed_out`; `EFAULT` (a bad `word`) and `EINVAL`
/// (a misaligned word; the timespec is always valid, `timeout_ns / 10^9` fits `isize`) panic.
pub fn futexWait(word: *const std.atomic.Value(u32), expected: u32, timeout_ns: ?u64) FutexWaitResult {
    var timeout: linux.timespec = undefined;
    if (timeout_ns) |ns| timeout = timespecFromNs(ns);
    const rc = linux.futex_4arg(&word.raw, .{ .cmd = .WAIT, .private = true }, expected, if (timeout_ns != null) &timeout else null);
    return switch (linux.errno(rc)) {
        .SUCCESS, .AGAIN, .INTR => .woken,
        .TIMEDOUT => blk: {
            assert(timeout_ns != null);
            break :blk .timed_out;
        },
        else => |err| unexpected("futex wait", err),
    };
}

/// `FUTEX_WAKE` (process-private): wakes up to `waiters_max` threads sleeping in `futexWait`
/// on `word`.
///
/// Errno: none is an error here. `EFAULT` is tolerated: a waker may call this after the word's
/// memory was freed and unmapped by the thread it let go (a lock's `unlock` stores first and
/// wakes second) — then nobody can be sleeping on it. `EINVAL` (the kernel's futex state for
/// the word is inconsistent with ours, e.g. a PI futex elsewhere) is tolerated as std did.
pub fn futexWake(word: *const std.atomic.Value(u32), waiters_max: u32) void {
    if (waiters_max == 0) return;
    const count = @min(waiters_max, std.math.maxInt(i32));
    const rc = linux.futex_3arg(&word.raw, .{ .cmd = .WAKE, .private = true }, count);
    switch (linux.errno(rc)) {
        .SUCCESS, .FAULT, .INVAL => {},
        else => |err| unexpected("futex wake", err),
    }
}

// -- epoll and eventfd --------------------------------------------------------------------------

pub const EpollCreateError = error{
    /// The per-process descriptor limit, or /proc/sys/fs/epoll/max_user_instances.
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
    SystemResources,
};

/// `epoll_create1(flags)`. Errno: `EMFILE` → `ProcessFdQuotaExceeded`, `ENFILE` →
/// `SystemFdQuotaExceeded`, `ENOMEM` → `SystemResources`; `EINVAL` (bad flags) panics.
pub fn epollCreate1(flags: u32) EpollCreateError!fd_t {
    const rc = linux.epoll_create1(flags);
    return switch (linux.errno(rc)) {
        .SUCCESS => @intCast(rc),
        .MFILE => error.ProcessFdQuotaExceeded,
        .NFILE => error.SystemFdQuotaExceeded,
        .NOMEM => error.SystemResources,
        else => |err| unexpected("epoll_create1", err),
    };
}

pub const EpollCtlError = error{
    /// `CTL_ADD` of a descriptor already in the set.
    FileDescriptorAlreadyPresentInSet,
    /// `CTL_ADD` of an epoll descriptor that would make a loop of epoll instances.
    OperationCausesCircularLoop,
    /// `CTL_MOD`/`CTL_DEL` of a descriptor not in the set.
    FileDescriptorNotRegistered,
    SystemResources,
    /// /proc/sys/fs/epoll/max_user_watches reached.
    UserResourceLimitReached,
    /// The descriptor does not support epoll (a regular file, a directory).
    FileDescriptorIncompatibleWithEpoll,
};

/// `epoll_ctl(epoll_fd, op, fd, event)`. Errno: `EEXIST`, `ELOOP`, `ENOENT`, `ENOMEM`,
/// `ENOSPC`, `EPERM` → the errors of `EpollCtlError` in that order; `EBADF` (a closed
/// descriptor: a use-after-close) and `EINVAL` (a bad op or flags) panic.
pub fn epollCtl(epoll_fd: fd_t, op: u32, fd: fd_t, event: ?*epoll_event) EpollCtlError!void {
    const rc = linux.epoll_ctl(epoll_fd, op, fd, event);
    return switch (linux.errno(rc)) {
        .SUCCESS => {},
        .EXIST => error.FileDescriptorAlreadyPresentInSet,
        .LOOP => error.OperationCausesCircularLoop,
        .NOENT => error.FileDescriptorNotRegistered,
        .NOMEM => error.SystemResources,
        .NOSPC => error.UserResourceLimitReached,
        .PERM => error.FileDescriptorIncompatibleWithEpoll,
        else => |err| unexpected("epoll_ctl", err),
    };
}

/// `epoll_wait(epoll_fd, events, timeout_ms)` (-1: no limit, 0: do not block). Returns the
/// number of events written to `events`; 0 when the timeout elapsed *or a signal interrupted
/// the wait* (`EINTR`): the caller treats both as an early return and recomputes its timeout —
/// a restart here would sleep the full original timeout again. `EBADF`, `EFAULT` and `EINVAL`
/// (a bad descriptor or buffer) panic.
pub fn epollWait(epoll_fd: fd_t, events: []epoll_event, timeout_ms: i32) usize {
    assert(events.len > 0);
    const rc = linux.epoll_wait(epoll_fd, events.ptr, @intCast(events.len), timeout_ms);
    return switch (linux.errno(rc)) {
        .SUCCESS => rc,
        .INTR => 0,
        else => |err| unexpected("epoll_wait", err),
    };
}

/// `epoll_pwait2` (Linux 5.11): `epollWait` with a nanosecond timeout (null: no limit), so a
/// timer deadline is not rounded up to the next whole millisecond of `epoll_wait`'s timeout
/// (which woke the driver owner up to 1 ms after a tick's deadline). Same return and errno
/// rules as `epollWait`. On a kernel without it (`ENOSYS`), or where a seccomp profile written
/// before Linux 5.11 refuses it (`EPERM`: container runtimes answer unknown calls so), it
/// falls back for good (remembered process-wide) to `epollWait` with the timeout rounded up to
/// milliseconds (never early).
pub fn epollWaitNs(epoll_fd: fd_t, events: []epoll_event, timeout_ns: ?u64) usize {
    assert(events.len > 0);
    // Monotonic: a plain flag; a racing reader at worst tries the missing call once more.
    if (!epoll_pwait2_missing.load(.monotonic)) {
        var ts: linux.timespec = undefined;
        if (timeout_ns) |ns| ts = timespecFromNs(ns);
        const ts_address: usize = if (timeout_ns != null) @intFromPtr(&ts) else 0;
        const rc = linux.syscall6(.epoll_pwait2, @as(usize, @bitCast(@as(isize, epoll_fd))), @intFromPtr(events.ptr), events.len, ts_address, 0, @sizeOf(linux.sigset_t));
        switch (linux.errno(rc)) {
            .SUCCESS => return rc,
            .INTR => return 0,
            .NOSYS, .PERM => epoll_pwait2_missing.store(true, .monotonic),
            else => |err| unexpected("epoll_pwait2", err),
        }
    }
    const timeout_ms: i32 = if (timeout_ns) |ns|
        @intCast(@min(std.math.divCeil(u64, ns, std.time.ns_per_ms) catch unreachable, std.math.maxInt(i32)))
    else
        -1;
    return epollWait(epoll_fd, events, timeout_ms);
}

var epoll_pwait2_missing: std.atomic.Value(bool) = .init(false);

/// Whether `epollWaitNs` fell back to `epoll_wait` (tests).
pub fn epollPwait2Missing() bool {
    return epoll_pwait2_missing.load(.monotonic);
}

/// Tests: forget a fallback (one test refuses the call on a thread of its own).
pub fn resetEpollPwait2Missing() void {
    comptime assert(builtin.is_test);
    epoll_pwait2_missing.store(false, .monotonic);
}

pub const EventFdError = error{
    SystemResources,
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
};

/// `eventfd(initial, flags)`. Errno: `EMFILE` → `ProcessFdQuotaExceeded`, `ENFILE` →
/// `SystemFdQuotaExceeded`, `ENODEV`/`ENOMEM` → `SystemResources`; `EINVAL` (bad flags) panics.
pub fn eventfd(initial: u32, flags: u32) EventFdError!fd_t {
    const rc = linux.eventfd(initial, flags);
    return switch (linux.errno(rc)) {
        .SUCCESS => @intCast(rc),
        .MFILE => error.ProcessFdQuotaExceeded,
        .NFILE => error.SystemFdQuotaExceeded,
        .NODEV, .NOMEM => error.SystemResources,
        else => |err| unexpected("eventfd", err),
    };
}

/// `close(fd)`. Errno: `EBADF` (closing a descriptor that is not open: a double close, which
/// could have closed someone else's descriptor) panics; `EINTR` is success — Linux has released
/// the descriptor, and a retry could close a descriptor another thread just opened; `EIO` and
/// the like (deferred write errors of files) are ignored — the runtime closes only sockets,
/// epoll and eventfd descriptors, and the descriptor is gone either way.
pub fn close(fd: fd_t) void {
    switch (linux.errno(linux.close(fd))) {
        .BADF => unexpected("close", .BADF),
        else => {},
    }
}

// -- time ---------------------------------------------------------------------------------

/// The time of `clock` in nanoseconds (`clock_gettime`, through the vDSO where it has the
/// clock). With libc linked (the benchmark program, ThreadSanitizer builds) it calls libc's
/// `clock_gettime`: `std.os.linux` finds the vDSO through the auxiliary vector that only Zig's
/// own start code records, so there every read was a system call (~10x slower on a VM; the
/// spin loop reads the clock every 32 checks: blocking_spawn lost 1.5-2.7x in the A/B of the
/// Zig 0.16 port). Errno: `EINVAL` (a clock this kernel lacks; CLOCK_MONOTONIC, CLOCK_REALTIME
/// and the CPU-time clocks exist since Linux 2.6) and `EFAULT` panic.
pub fn clockNs(clock: linux.clockid_t) u64 {
    var ts: linux.timespec = undefined;
    if (builtin.link_libc) {
        if (std.c.clock_gettime(clock, &ts) != 0) unexpected("clock_gettime", @enumFromInt(std.c._errno().*));
    } else switch (linux.errno(linux.clock_gettime(clock, &ts))) {
        .SUCCESS => {},
        else => |err| unexpected("clock_gettime", err),
    }
    return @as(u64, @intCast(ts.sec)) * std.time.ns_per_s + @as(u64, @intCast(ts.nsec));
}

/// Blocks the calling thread for at least `duration_ns` (CLOCK_MONOTONIC). It sleeps until an
/// absolute deadline (`clock_nanosleep` with `TIMER_ABSTIME`), so `EINTR` resumes the same
/// deadline: no time is lost or added however many signals arrive. Other errno (`EINVAL`,
/// `EFAULT`) panic.
pub fn sleepNs(duration_ns: u64) void {
    const deadline = timespecFromNs(clockNs(.MONOTONIC) +| duration_ns);
    while (true) {
        switch (linux.errno(linux.clock_nanosleep(.MONOTONIC, .{ .ABSTIME = true }, &deadline, null))) {
            .SUCCESS => return,
            .INTR => continue,
            else => |err| unexpected("clock_nanosleep", err),
        }
    }
}

// -- tests ------------------------------------------------------------------------------------

const testing = std.testing;

test "futexWait times out while the word holds the value, and returns at once when it differs" {
    var word = std.atomic.Value(u32).init(7);
    const start_ns = clockNs(.MONOTONIC);
    try testing.expectEqual(FutexWaitResult.timed_out, futexWait(&word, 7, 2 * std.time.ns_per_ms));
    try testing.expect(clockNs(.MONOTONIC) - start_ns >= 2 * std.time.ns_per_ms);
    // EAGAIN: the word is not `expected`; without a timeout this would otherwise sleep forever.
    try testing.expectEqual(FutexWaitResult.woken, futexWait(&word, 8, null));
    futexWake(&word, 0); // No-op, no system call.
    futexWake(&word, 1); // Nobody sleeping: fine.
}

test "futexWake wakes a thread sleeping in futexWait" {
    var word = std.atomic.Value(u32).init(0);
    const Sleeper = struct {
        fn run(w: *std.atomic.Value(u32)) void {
            while (w.load(.acquire) == 0) _ = futexWait(w, 0, null);
        }
    };
    const thread = try std.Thread.spawn(.{}, Sleeper.run, .{&word});
    sleepNs(2 * std.time.ns_per_ms); // Most likely asleep by now; correct either way.
    word.store(1, .release);
    futexWake(&word, 1);
    thread.join();
}

/// A thread blocked in a wait that only a signal can end, and the means to send it that signal:
/// SIGUSR1 with an empty handler, installed for the test and restored after it.
const Interrupted = struct {
    tid: std.atomic.Value(linux.pid_t) = .init(0),
    returned: std.atomic.Value(bool) = .init(false),
    /// What the wait returned (set before `returned`).
    result: u64 = 0,

    fn handler(_: linux.SIG) callconv(.c) void {}

    /// Runs `wait` on a new thread and signals that thread until `wait` returns, at most for
    /// `limit_ms` (the wait itself is given 10x that: a wait that restarted after the signal
    /// would still be blocked when we stop). Returns `wait`'s result.
    fn run(comptime wait: fn () u64, limit_ms: u64) !u64 {
        var action: std.posix.Sigaction = .{ .handler = .{ .handler = handler }, .mask = std.posix.sigemptyset(), .flags = 0 };
        var previous: std.posix.Sigaction = undefined;
        std.posix.sigaction(.USR1, &action, &previous);
        defer std.posix.sigaction(.USR1, &previous, null);

        var self: Interrupted = .{};
        const Body = struct {
            fn body(s: *Interrupted) void {
                s.tid.store(linux.gettid(), .release);
                s.result = wait();
                s.returned.store(true, .release);
            }
        };
        const thread = try std.Thread.spawn(.{}, Body.body, .{&self});
        defer thread.join();
        while (self.tid.load(.acquire) == 0) std.Thread.yield() catch {};
        const give_up_ns = clockNs(.MONOTONIC) + limit_ms * std.time.ns_per_ms;
        // Signal repeatedly: a signal that arrives before the thread blocks interrupts nothing.
        while (!self.returned.load(.acquire)) {
            if (clockNs(.MONOTONIC) > give_up_ns) return error.WaitNotInterrupted;
            _ = linux.tgkill(linux.getpid(), self.tid.load(.acquire), .USR1);
            sleepNs(1 * std.time.ns_per_ms);
        }
        return self.result;
    }
};

test "epollWait returns 0 events on EINTR instead of restarting with the old timeout" {
    const Wait = struct {
        var epoll_fd: fd_t = -1;
        fn wait() u64 {
            var events: [4]epoll_event = undefined;
            return epollWait(epoll_fd, &events, 10_000); // 10 s: far beyond the test's limit.
        }
    };
    Wait.epoll_fd = try epollCreate1(linux.EPOLL.CLOEXEC);
    defer close(Wait.epoll_fd);
    try testing.expectEqual(@as(u64, 0), try Interrupted.run(Wait.wait, 1_000));
}

test "futexWait returns on EINTR (the caller recomputes its timeout)" {
    const Wait = struct {
        var word = std.atomic.Value(u32).init(0);
        fn wait() u64 {
            return @intFromEnum(futexWait(&word, 0, 10 * std.time.ns_per_s));
        }
    };
    try testing.expectEqual(@as(u64, @intFromEnum(FutexWaitResult.woken)), try Interrupted.run(Wait.wait, 1_000));
}

test "eventfd, epoll registration and readiness; sleepNs sleeps at least its duration" {
    const epoll_fd = try epollCreate1(linux.EPOLL.CLOEXEC);
    defer close(epoll_fd);
    const event_fd = try eventfd(0, linux.EFD.CLOEXEC | linux.EFD.NONBLOCK);
    defer close(event_fd);
    var event = epoll_event{ .events = linux.EPOLL.IN, .data = .{ .u64 = 42 } };
    try epollCtl(epoll_fd, linux.EPOLL.CTL_ADD, event_fd, &event);
    try testing.expectError(error.FileDescriptorAlreadyPresentInSet, epollCtl(epoll_fd, linux.EPOLL.CTL_ADD, event_fd, &event));
    var events: [2]epoll_event = undefined;
    try testing.expectEqual(@as(usize, 0), epollWait(epoll_fd, &events, 0));
    const one: u64 = 1;
    try testing.expectEqual(@as(usize, 8), linux.write(event_fd, std.mem.asBytes(&one), 8));
    try testing.expectEqual(@as(usize, 1), epollWait(epoll_fd, &events, 1_000));
    try testing.expectEqual(@as(u64, 42), events[0].data.u64);
    try epollCtl(epoll_fd, linux.EPOLL.CTL_DEL, event_fd, null);
    try testing.expectError(error.FileDescriptorNotRegistered, epollCtl(epoll_fd, linux.EPOLL.CTL_DEL, event_fd, null));

    const start_ns = clockNs(.MONOTONIC);
    sleepNs(3 * std.time.ns_per_ms);
    try testing.expect(clockNs(.MONOTONIC) - start_ns >= 3 * std.time.ns_per_ms);
    try testing.expect(clockNs(.REALTIME) > 1_600_000_000 * std.time.ns_per_s); // After 2020.
    try testing.expect(clockNs(.THREAD_CPUTIME_ID) > 0);
}
