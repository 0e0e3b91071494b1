//! The runtime's monotonic clock (CLOCK_MONOTONIC, nanoseconds).

const std = @import("std");
const os = @import("../os.zig");

pub fn nowNs() u64 {
    return os.clockNs(.MONOTONIC);
}

test "monotonic" {
    const a = nowNs();
    const b = nowNs();
    try std.testing.expect(b >= a);
}
