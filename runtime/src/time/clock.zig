//! The runtime's monotonic clock (CLOCK_MONOTONIC, nanoseconds).

const std = @import("std");

pub fn nowNs() u64 {
    const ts = std.posix.clock_gettime(.MONOTONIC) catch unreachable; // Always available on Linux.
    return @as(u64, @intCast(ts.sec)) * std.time.ns_per_s + @as(u64, @intCast(ts.nsec));
}

test "monotonic" {
    const a = nowNs();
    const b = nowNs();
    try std.testing.expect(b >= a);
}
