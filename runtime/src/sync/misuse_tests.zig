//! Runs sync/misuse_main.zig (built in ReleaseFast by build.zig; its path comes in through
//! the `misuse_options` build options) as a child process, to prove that lock misuse panics
//! in ReleaseFast too: a Zig test cannot catch a panic in its own process.

const std = @import("std");
const options = @import("misuse_options");
const testing = std.testing;

fn runScenario(scenario: []const u8) !std.process.RunResult {
    return std.process.run(testing.allocator, testing.io, .{
        .argv = &.{ options.misuse_exe, scenario },
    });
}

/// Expects `scenario` to abort (SIGABRT, the default panic handler's end) with `message` on
/// stderr.
pub fn expectPanic(scenario: []const u8, message: []const u8) !void {
    const result = try runScenario(scenario);
    defer testing.allocator.free(result.stdout);
    defer testing.allocator.free(result.stderr);
    errdefer std.debug.print("scenario {s}: term {any}, stderr:\n{s}\n", .{ scenario, result.term, result.stderr });
    try testing.expectEqual(std.process.Child.Term{ .signal = .ABRT }, result.term);
    try testing.expect(std.mem.indexOf(u8, result.stderr, message) != null);
}

test "misuse program: the correct use of every guard exits 0 without output" {
    const result = try runScenario("ok");
    defer testing.allocator.free(result.stdout);
    defer testing.allocator.free(result.stderr);
    try testing.expectEqual(std.process.Child.Term{ .exited = 0 }, result.term);
    try testing.expectEqualStrings("", result.stderr);
}

test "misuse program: an unknown scenario is a usage error, not a panic" {
    const result = try runScenario("no_such_scenario");
    defer testing.allocator.free(result.stdout);
    defer testing.allocator.free(result.stderr);
    try testing.expectEqual(std.process.Child.Term{ .exited = 2 }, result.term);
}
