//! std.Io's clocks, sleeps, futex waits and randomness for `ampere.Io`.
//!
//! - `now(clock)`: `clock_gettime` of the clock std.Io names (real: REALTIME, awake:
//!   MONOTONIC, boot: BOOTTIME, cpu_process / cpu_thread: the CPU-time clocks; on a fiber,
//!   `cpu_thread` is the CPU time of the worker thread running it). `clockResolution`:
//!   `clock_getres`. Neither blocks.
//! - `sleep(timeout)`: a `time.Sleep` on the runtime's timer wheel (65.5 µs ticks, never early),
//!   so a sleeping fiber holds no thread. A timeout in another clock than the monotonic one is
//!   converted to a monotonic deadline when the sleep starts (as a relative sleep would be).
//!   A cancellation point (also for a zero or past deadline); `.none` returns at once, as in
//!   `std.Io.Threaded`.
//! - `futexWait(ptr, expected, timeout)`: `Futex.Wait`, raced against a `Sleep` when there is a
//!   timeout; a timeout is reported as a spurious wake-up, which futex callers tolerate.
//! - `random`: a ChaCha CSPRNG per thread, seeded from `getrandom` (std.Io.Threaded does the
//!   same); `randomSecure`: `getrandom` itself, a cancellation point.

const std = @import("std");
const linux = std.os.linux;
const posix = std.posix;

const os = @import("../os.zig");
const time = @import("../time.zig");
const sleep_future = @import("../time/sleep.zig");
const clock = @import("../time/clock.zig");
const Fiber = @import("../fiber/Fiber.zig");
const Futex = @import("Futex.zig");
const AmpereIo = @import("State.zig");

pub fn clockId(c: std.Io.Clock) linux.clockid_t {
    return switch (c) {
        .real => .REALTIME,
        .awake => .MONOTONIC,
        .boot => .BOOTTIME,
        .cpu_process => .PROCESS_CPUTIME_ID,
        .cpu_thread => .THREAD_CPUTIME_ID,
    };
}

pub fn now(userdata: ?*anyopaque, c: std.Io.Clock) std.Io.Timestamp {
    _ = userdata;
    var ts: linux.timespec = undefined;
    return switch (linux.errno(linux.clock_gettime(clockId(c), &ts))) {
        .SUCCESS => .{ .nanoseconds = @as(i96, ts.sec) * std.time.ns_per_s + ts.nsec },
        else => .zero,
    };
}

pub fn clockResolution(userdata: ?*anyopaque, c: std.Io.Clock) std.Io.Clock.ResolutionError!std.Io.Duration {
    _ = userdata;
    var ts: linux.timespec = undefined;
    return switch (linux.errno(linux.clock_getres(clockId(c), &ts))) {
        .SUCCESS => .{ .nanoseconds = @as(i96, ts.sec) * std.time.ns_per_s + ts.nsec },
        .INVAL => error.ClockUnavailable,
        else => |err| posix.unexpectedErrno(err),
    };
}

/// The monotonic deadline (runtime clock, `time/clock.zig`) of `timeout`, or null for none.
pub fn monotonicDeadlineNs(timeout: std.Io.Timeout) ?u64 {
    const remaining_ns: i96 = switch (timeout) {
        .none => return null,
        .duration => |d| d.raw.nanoseconds,
        .deadline => |d| d.raw.nanoseconds - now(null, d.clock).nanoseconds,
    };
    const base = clock.nowNs();
    if (remaining_ns <= 0) return base;
    return base +| std.math.lossyCast(u64, remaining_ns);
}

pub fn sleep(userdata: ?*anyopaque, timeout: std.Io.Timeout) std.Io.Cancelable!void {
    const self = AmpereIo.fromUserdata(userdata);
    const deadline_ns = monotonicDeadlineNs(timeout) orelse return;
    return self.waitCancelable(sleep_future.sleepUntil(deadline_ns));
}

pub fn futexWait(userdata: ?*anyopaque, ptr: *const u32, expected: u32, timeout: std.Io.Timeout) std.Io.Cancelable!void {
    const self = AmpereIo.fromUserdata(userdata);
    // No timeout (every std.Io Mutex and Condition wait): the tag alone decides, without a
    // call that copies the whole `Timeout` union.
    if (timeout == .none) {
        if (Fiber.current()) |fiber| {
            // Built where it is polled (`Futex.initWait`), not copied in.
            var pinned: Futex.Wait = undefined;
            self.futex.initWait(&pinned, ptr, expected);
            return fiber.awaitCancelable(&pinned);
        }
    }
    const wait = self.futex.wait(ptr, expected);
    const deadline_ns = monotonicDeadlineNs(timeout) orelse return self.waitCancelable(wait);
    const timed = time.Timeout(Futex.Wait){ .inner = wait, .timer = sleep_future.sleepUntil(deadline_ns) };
    (try self.waitCancelable(timed)) catch |err| switch (err) {
        error.Timeout => {}, // A spurious wake-up, as far as futex callers can tell.
    };
}

pub fn futexWaitUncancelable(userdata: ?*anyopaque, ptr: *const u32, expected: u32) void {
    const self = AmpereIo.fromUserdata(userdata);
    if (Fiber.current()) |fiber| {
        var pinned: Futex.Wait = undefined; // As in `futexWait`.
        self.futex.initWait(&pinned, ptr, expected);
        return fiber.awaitFuture(&pinned);
    }
    self.waitUncancelable(self.futex.wait(ptr, expected));
}

pub fn futexWake(userdata: ?*anyopaque, ptr: *const u32, max_waiters: u32) void {
    const self = AmpereIo.fromUserdata(userdata);
    _ = self.futex.wake(ptr, max_waiters);
}

// -- randomness ------------------------------------------------------------------------------

const Csprng = std.Random.DefaultCsprng;

/// Per thread (a fiber's `random` uses the generator of the thread it runs on; it does not
/// suspend in between).
threadlocal var csprng: ?Csprng = null;

pub noinline fn random(userdata: ?*anyopaque, buffer: []u8) void {
    _ = userdata;
    if (csprng == null) {
        var seed: [Csprng.secret_seed_length]u8 = undefined;
        getrandom(&seed) catch {
            // No entropy source: still distinct per thread and per process (std's fallback
            // mixes the same kind of values).
            @memset(&seed, 0);
            std.mem.writeInt(u64, seed[0..8], os.clockNs(.MONOTONIC), .little);
            std.mem.writeInt(u64, seed[8..16], @intFromPtr(&seed), .little);
            std.mem.writeInt(u32, seed[16..20], @bitCast(linux.gettid()), .little);
        };
        csprng = Csprng.init(seed);
    }
    csprng.?.fill(buffer);
}

fn getrandom(buffer: []u8) error{EntropyUnavailable}!void {
    var filled: usize = 0;
    while (filled < buffer.len) {
        const rc = linux.getrandom(buffer[filled..].ptr, buffer.len - filled, 0);
        switch (linux.errno(rc)) {
            .SUCCESS => filled += rc,
            .INTR => {},
            else => return error.EntropyUnavailable,
        }
    }
}

pub fn randomSecure(userdata: ?*anyopaque, buffer: []u8) std.Io.RandomSecureError!void {
    _ = userdata;
    if (Fiber.current()) |fiber| {
        if (fiber.takeCancel()) return error.Canceled;
    }
    return getrandom(buffer);
}
