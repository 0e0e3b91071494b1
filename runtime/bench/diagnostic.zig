//! The one-line message of the last failure of a parser (command line, constants, variants),
//! kept in a fixed buffer and printed by main as `error: <message>`. A message longer than the
//! buffer is cut and ends in "...".

const std = @import("std");

/// A diagnostic whose `fail` records the message and returns `failure` (of `Error`).
pub fn Diagnostic(comptime Error: type, comptime failure: Error, comptime capacity: usize) type {
    return struct {
        const Self = @This();
        const ellipsis = "...";
        comptime {
            std.debug.assert(capacity > ellipsis.len);
        }

        buffer: [capacity]u8 = undefined,
        len: usize = 0,

        pub fn fail(self: *Self, comptime format: []const u8, args: anytype) Error {
            const text = std.fmt.bufPrint(&self.buffer, format, args) catch blk: {
                @memcpy(self.buffer[self.buffer.len - ellipsis.len ..], ellipsis);
                break :blk self.buffer[0..];
            };
            self.len = text.len;
            return failure;
        }

        pub fn message(self: *const Self) []const u8 {
            return self.buffer[0..self.len];
        }
    };
}

test "a message that does not fit is cut and ends in ..." {
    const D = Diagnostic(error{Bad}, error.Bad, 8);
    var diag = D{};
    try std.testing.expectError(error.Bad, @as(error{Bad}!void, diag.fail("{s}", .{"0123456789"})));
    try std.testing.expectEqualStrings("01234...", diag.message());
    try std.testing.expectError(error.Bad, @as(error{Bad}!void, diag.fail("ok", .{})));
    try std.testing.expectEqualStrings("ok", diag.message());
}
