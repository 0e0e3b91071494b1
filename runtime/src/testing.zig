//! Helpers for the runtime's own tests: stress-test sizing, reproducible randomness, and the
//! gate that holds a thread inside a hook's window (`HookWindow`).
//!
//! `AMPERE_TEST_INTENSITY` sizes the stress tests: `smoke` (CI, ThreadSanitizer) runs a small
//! fraction of the work, `full` (the default locally) the sizes the issues ask for. Every
//! randomised test takes its seed from `seed()`, which honours `AMPERE_TEST_SEED` and prints
//! the seed it used when the test fails, so a failure can be replayed exactly. Test builds only:
//! the environment comes from the test runner (`std.testing.environ`).

const std = @import("std");
const builtin = @import("builtin");
const os = @import("os.zig");
const assert = std.debug.assert;

pub const Intensity = enum { smoke, full };

pub fn intensity() Intensity {
    const value = std.testing.environ.getPosix("AMPERE_TEST_INTENSITY") orelse return .full;
    if (std.mem.eql(u8, value, "smoke")) return .smoke;
    if (std.mem.eql(u8, value, "full")) return .full;
    std.debug.panic("AMPERE_TEST_INTENSITY must be 'smoke' or 'full', not '{s}'", .{value});
}

/// `full` at full intensity, `full / divisor` (at least 1) at smoke intensity.
pub fn scaled(full: usize, divisor: usize) usize {
    std.debug.assert(divisor > 0);
    return switch (intensity()) {
        .full => full,
        .smoke => @max(1, full / divisor),
    };
}

/// The seed for randomised tests: `AMPERE_TEST_SEED` if set, otherwise from the clock.
pub fn seed() u64 {
    if (std.testing.environ.getPosix("AMPERE_TEST_SEED")) |text| {
        return std.fmt.parseInt(u64, text, 0) catch
            std.debug.panic("AMPERE_TEST_SEED is not an integer: '{s}'", .{text});
    }
    return os.clockNs(.REALTIME);
}

/// Prints the seed so a failing run can be replayed; call with `errdefer`.
pub fn reportSeed(test_name: []const u8, used_seed: u64) void {
    std.debug.print("\n{s} failed with AMPERE_TEST_SEED={d}\n", .{ test_name, used_seed });
}

/// True when the test binary is built with ThreadSanitizer (stress sizes shrink further).
pub const under_tsan = builtin.sanitize_thread;

test "intensity parses the environment" {
    _ = intensity();
    try std.testing.expect(scaled(100, 10) >= 10);
}

/// Holds the thread that reaches a hook point (hook.zig) inside the window that the point
/// marks, while the test does what must be safe there; once per `arm`. A test keeps one gate in
/// a container-level variable and arms the hook with a function that calls `hold`:
///
///     gate.arm();            // the next thread to reach the hook point is held
///     ...                    // make a thread reach it
///     gate.waitHeld();       // it is in the window now
///     ...                    // act or check inside the window
///     gate.release();        // let it go
///     gate.waitLeft();       // (when the next round must not find it still inside)
///
/// Orderings: each flag is stored with release and read with acquire, so what one side did
/// before its store is visible to the other after its load; `armed` is taken with a swap, so
/// exactly one thread is held per `arm`.
pub const HookWindow = struct {
    armed: std.atomic.Value(bool) = .init(false),
    held: std.atomic.Value(bool) = .init(false),
    released: std.atomic.Value(bool) = .init(false),
    left: std.atomic.Value(bool) = .init(false),

    /// The next `hold` holds its thread. A thread held in the previous round must have been
    /// released; `arm` waits until it left (resetting `released` under it would hold it again).
    pub fn arm(self: *HookWindow) void {
        if (self.held.load(.acquire)) {
            assert(self.released.load(.acquire));
            self.waitLeft();
        }
        self.held.store(false, .release);
        self.released.store(false, .release);
        self.left.store(false, .release);
        self.armed.store(true, .release);
    }

    /// In the hook: if armed, signal `held` and wait for `release`; otherwise return at once.
    pub fn hold(self: *HookWindow) void {
        if (!self.armed.swap(false, .acq_rel)) return;
        self.held.store(true, .release);
        while (!self.released.load(.acquire)) std.Thread.yield() catch {};
        self.left.store(true, .release);
    }

    /// Whether a thread has been held since `arm` (it may have left again).
    pub fn wasHeld(self: *HookWindow) bool {
        return self.held.load(.acquire);
    }

    pub fn waitHeld(self: *HookWindow) void {
        while (!self.wasHeld()) std.Thread.yield() catch {};
    }

    /// `waitHeld` for at most `timeout_ns`: whether a thread was held. For a hook that the
    /// thread reaches after the event the test saw (so it may still be on its way), where a
    /// thread that never comes must fail the test, not hang it.
    pub fn waitHeldFor(self: *HookWindow, timeout_ns: u64) bool {
        const start_ns = os.clockNs(.MONOTONIC);
        while (!self.wasHeld()) {
            if (os.clockNs(.MONOTONIC) -| start_ns > timeout_ns) return false;
            std.Thread.yield() catch {};
        }
        return true;
    }

    /// Lets the held thread go (harmless when none is held: a failed test's errdefer).
    pub fn release(self: *HookWindow) void {
        self.released.store(true, .release);
    }

    pub fn waitLeft(self: *HookWindow) void {
        while (!self.left.load(.acquire)) std.Thread.yield() catch {};
    }
};

test "a hook window holds one thread per arm until it is released" {
    const S = struct {
        var gate: HookWindow = .{};
        var passed = std.atomic.Value(u32).init(0);
        fn run() void {
            gate.hold();
            _ = passed.fetchAdd(1, .monotonic);
        }
    };
    S.gate.arm();
    const t = try std.Thread.spawn(.{}, S.run, .{});
    S.gate.waitHeld();
    try std.testing.expectEqual(@as(u32, 0), S.passed.load(.monotonic));
    S.gate.release();
    S.gate.waitLeft();
    t.join();
    try std.testing.expectEqual(@as(u32, 1), S.passed.load(.monotonic));
    S.run(); // Not armed: passes at once.
    try std.testing.expectEqual(@as(u32, 2), S.passed.load(.monotonic));
}
