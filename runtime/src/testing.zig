//! Helpers for the runtime's own tests: stress-test sizing and reproducible randomness.
//!
//! `AMPERE_TEST_INTENSITY` sizes the stress tests: `smoke` (CI, ThreadSanitizer) runs a small
//! fraction of the work, `full` (the default locally) the sizes the issues ask for. Every
//! randomised test takes its seed from `seed()`, which honours `AMPERE_TEST_SEED` and prints
//! the seed it used when the test fails, so a failure can be replayed exactly. Test builds only:
//! the environment comes from the test runner (`std.testing.environ`).

const std = @import("std");
const builtin = @import("builtin");
const os = @import("os.zig");

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
