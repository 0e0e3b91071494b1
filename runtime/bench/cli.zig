//! Command line of both benchmark programs (README.md, "Program interface"); the same
//! parser as rust_bench/src/cli.rs. Options take their value as the next argument or after
//! `=` (`--suite=echo`). Parsing does not allocate: options borrow the argument strings, and
//! the repeatable options are bounded (`repeat_max`).

const std = @import("std");

pub const usage =
    \\usage: ampere_bench [--suite micro|echo|net|io|all] [--quick | --profile full|quick] [--filter SUBSTR]...
    \\                    [--workers N[,N...]] [--variant NAME] [--set KEY=VALUE]... [--invocation K]
    \\                    [--csv PATH] [--meta PATH] [--metrics PATH] [--json] [--list] [--help]
    \\
    \\  --suite S          micro (default), echo, net, io or all
    \\  --quick            the quick profile of constants.json (same as --profile quick)
    \\  --profile P        constant profile: full (default) or quick
    \\  --filter SUBSTR    only benchmarks whose name contains SUBSTR (repeatable: any of them)
    \\  --workers N,...    worker counts of Tiers 3-4, run in this order, a fresh runtime each
    \\                     (default: num_workers); other tiers run once
    \\  --variant NAME     runtime variant of variants.json (default: ampere)
    \\  --set KEY=VALUE    override one constant (comma-separated integers for list keys)
    \\  --invocation K     value of the CSV invocation column (default 0)
    \\  --csv PATH         write measured rows to PATH (atomically; PATH must not exist)
    \\  --meta PATH        write the metadata JSON to PATH (atomically; PATH must not exist)
    \\  --metrics PATH     write the runtime's event counts per benchmark (JSON lines, measured
    \\                     iterations only) to PATH (atomically; PATH must not exist)
    \\  --json             print the summary JSON instead of the table
    \\  --list             print `suite tier benchmark param` per selected benchmark and exit
    \\  --help             this text
    \\
    \\exit codes: 0 success, 1 a benchmark failed its own check (or results could not be written),
    \\2 bad command line
    \\
;

/// Most `--filter` or `--set` options accepted (TIGER_STYLE: bounded).
pub const repeat_max = 64;

/// Most worker counts in one `--workers` list.
pub const worker_counts_max = 16;
/// Largest worker count `--workers` accepts (a sanity bound, the same on both sides; ampere
/// itself supports fewer: main refuses counts above `harness.workers_max`).
pub const worker_count_max = 1024;

pub const Suite = enum {
    micro,
    echo,
    net,
    io,
    all,

    pub fn includes(self: Suite, suite: []const u8) bool {
        return switch (self) {
            .micro => std.mem.eql(u8, suite, "micro"),
            .echo => std.mem.eql(u8, suite, "echo"),
            .net => std.mem.eql(u8, suite, "net"),
            .io => std.mem.eql(u8, suite, "io"),
            .all => true,
        };
    }
};

/// The worker counts of `--workers`, in command-line order (distinct, each >= 1).
pub const WorkerCounts = struct {
    buffer: [worker_counts_max]u64 = undefined,
    len: usize = 0,

    pub fn items(self: *const WorkerCounts) []const u64 {
        return self.buffer[0..self.len];
    }

    /// Parses `N[,N...]`.
    pub fn parse(text: []const u8, diag: *Diagnostic) Error!WorkerCounts {
        var counts = WorkerCounts{};
        var parts = std.mem.splitScalar(u8, text, ',');
        while (parts.next()) |part| {
            // Digits only, like the Rust side (parseInt alone would take `+1` and `1_0`).
            const digits = part.len > 0 and for (part) |char| {
                if (!std.ascii.isDigit(char)) break false;
            } else true;
            const parsed: ?u64 = if (digits) std.fmt.parseInt(u64, part, 10) catch null else null;
            const count = parsed orelse
                return diag.fail("--workers: '{s}' is not a list of positive integers (e.g. 1,2,4)", .{text});
            if (count == 0 or count > worker_count_max) {
                return diag.fail("--workers: {d} is outside 1..{d}", .{ count, worker_count_max });
            }
            if (std.mem.indexOfScalar(u64, counts.items(), count) != null) {
                return diag.fail("--workers: {d} is given twice", .{count});
            }
            if (counts.len == worker_counts_max) return diag.fail("--workers: more than {d} counts", .{worker_counts_max});
            counts.buffer[counts.len] = count;
            counts.len += 1;
        }
        std.debug.assert(counts.len >= 1);
        return counts;
    }
};

pub const Options = struct {
    suite: Suite = .micro,
    profile: []const u8 = "full",
    filters: [repeat_max][]const u8 = undefined,
    filter_len: usize = 0,
    /// `--set KEY=VALUE` assignments, in command-line order.
    overrides: [repeat_max][]const u8 = undefined,
    override_len: usize = 0,
    /// `--workers`; null: Tiers 3–4 run once at `num_workers`.
    workers: ?WorkerCounts = null,
    /// `--variant`; null: the program's own base runtime name.
    variant: ?[]const u8 = null,
    invocation: u64 = 0,
    csv: ?[]const u8 = null,
    meta: ?[]const u8 = null,
    metrics: ?[]const u8 = null,
    json: bool = false,
    list: bool = false,
    help: bool = false,

    pub fn filterList(self: *const Options) []const []const u8 {
        return self.filters[0..self.filter_len];
    }

    pub fn overrideList(self: *const Options) []const []const u8 {
        return self.overrides[0..self.override_len];
    }
};

pub const Error = error{BadCommandLine};

/// The one-line message of a parse failure.
pub const Diagnostic = @import("diagnostic.zig").Diagnostic(Error, error.BadCommandLine, 256);

const value_flags = [_][]const u8{ "--suite", "--profile", "--filter", "--workers", "--variant", "--set", "--invocation", "--csv", "--meta", "--metrics" };

fn takesValue(flag: []const u8) bool {
    for (value_flags) |f| if (std.mem.eql(u8, f, flag)) return true;
    return false;
}

/// Parses the arguments after the program name.
pub fn parse(args: []const []const u8, diag: *Diagnostic) Error!Options {
    var options = Options{};
    var i: usize = 0;
    while (i < args.len) {
        const arg = args[i];
        i += 1;
        var flag = arg;
        var inline_value: ?[]const u8 = null;
        if (std.mem.startsWith(u8, arg, "--")) {
            if (std.mem.indexOfScalar(u8, arg, '=')) |eq| {
                flag = arg[0..eq];
                inline_value = arg[eq + 1 ..];
            }
        }
        var value: []const u8 = "";
        if (takesValue(flag)) {
            if (inline_value) |v| {
                value = v;
            } else {
                if (i >= args.len) return diag.fail("{s} needs a value", .{flag});
                value = args[i];
                i += 1;
            }
        } else if (inline_value != null) {
            return diag.fail("{s} takes no value", .{flag});
        }
        const eql = std.mem.eql;
        if (eql(u8, flag, "--suite")) {
            options.suite = std.meta.stringToEnum(Suite, value) orelse
                return diag.fail("--suite: unknown suite '{s}' (micro, echo, net, io, all)", .{value});
        } else if (eql(u8, flag, "--quick")) {
            options.profile = "quick";
        } else if (eql(u8, flag, "--profile")) {
            if (!eql(u8, value, "full") and !eql(u8, value, "quick")) {
                return diag.fail("--profile: unknown profile '{s}' (full, quick)", .{value});
            }
            options.profile = value;
        } else if (eql(u8, flag, "--filter")) {
            if (value.len == 0) return diag.fail("--filter needs a non-empty substring", .{});
            if (options.filter_len == repeat_max) return diag.fail("more than {d} --filter options", .{repeat_max});
            options.filters[options.filter_len] = value;
            options.filter_len += 1;
        } else if (eql(u8, flag, "--workers")) {
            options.workers = try WorkerCounts.parse(value, diag);
        } else if (eql(u8, flag, "--variant")) {
            if (value.len == 0) return diag.fail("--variant needs a name", .{});
            options.variant = value;
        } else if (eql(u8, flag, "--set")) {
            if (options.override_len == repeat_max) return diag.fail("more than {d} --set options", .{repeat_max});
            options.overrides[options.override_len] = value;
            options.override_len += 1;
        } else if (eql(u8, flag, "--invocation")) {
            options.invocation = std.fmt.parseInt(u64, value, 10) catch
                return diag.fail("--invocation: '{s}' is not a non-negative integer", .{value});
        } else if (eql(u8, flag, "--csv") or eql(u8, flag, "--meta") or eql(u8, flag, "--metrics")) {
            if (value.len == 0) return diag.fail("{s} needs a path", .{flag});
            if (eql(u8, flag, "--csv")) {
                options.csv = value;
            } else if (eql(u8, flag, "--meta")) {
                options.meta = value;
            } else {
                options.metrics = value;
            }
        } else if (eql(u8, flag, "--json")) {
            options.json = true;
        } else if (eql(u8, flag, "--list")) {
            options.list = true;
        } else if (eql(u8, flag, "--help") or eql(u8, flag, "-h")) {
            options.help = true;
        } else {
            return diag.fail("unknown argument '{s}' (see --help)", .{flag});
        }
    }
    return options;
}

const testing = std.testing;

fn words(comptime text: []const u8) []const []const u8 {
    comptime {
        var list: []const []const u8 = &.{};
        var it = std.mem.tokenizeScalar(u8, text, ' ');
        while (it.next()) |w| list = list ++ .{w};
        return list;
    }
}

test "defaults" {
    var diag = Diagnostic{};
    const o = try parse(&.{}, &diag);
    try testing.expectEqual(Suite.micro, o.suite);
    try testing.expectEqualStrings("full", o.profile);
    try testing.expect(!o.json and !o.list and !o.help and o.csv == null);
}

test "every flag" {
    var diag = Diagnostic{};
    const o = try parse(comptime words("--suite all --quick --filter mutex --filter=echo --workers 2 --set sync_ops=5 " ++
        "--variant ampere.nospin --invocation 3 --csv out.csv --meta=m.json --metrics x.jsonl --json --list --help"), &diag);
    try testing.expectEqual(Suite.all, o.suite);
    try testing.expectEqualStrings("quick", o.profile);
    try testing.expectEqual(@as(usize, 2), o.filterList().len);
    try testing.expectEqualStrings("echo", o.filterList()[1]);
    try testing.expectEqualSlices(u64, &.{2}, o.workers.?.items());
    try testing.expectEqualStrings("sync_ops=5", o.overrideList()[0]);
    try testing.expectEqualStrings("ampere.nospin", o.variant.?);
    try testing.expectEqual(@as(u64, 3), o.invocation);
    try testing.expectEqualStrings("out.csv", o.csv.?);
    try testing.expectEqualStrings("m.json", o.meta.?);
    try testing.expectEqualStrings("x.jsonl", o.metrics.?);
    try testing.expect(o.json and o.list and o.help);
    const p = try parse(comptime words("--profile quick --set=echo_batch_sizes=1,2"), &diag);
    try testing.expectEqualStrings("quick", p.profile);
    try testing.expectEqualStrings("echo_batch_sizes=1,2", p.overrideList()[0]);
    try testing.expect(p.workers == null and p.variant == null);
}

test "worker lists keep their order; the last --workers wins" {
    var diag = Diagnostic{};
    const o = try parse(comptime words("--workers 4,1,2"), &diag);
    try testing.expectEqualSlices(u64, &.{ 4, 1, 2 }, o.workers.?.items());
    const p = try parse(comptime words("--workers=1,2 --workers 8"), &diag);
    try testing.expectEqualSlices(u64, &.{8}, p.workers.?.items());
    const many = try parse(comptime words("--workers 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,1024"), &diag);
    try testing.expectEqual(@as(usize, worker_counts_max), many.workers.?.len);
}

test "errors" {
    const cases = .{
        .{ "--suite nope", "unknown suite" },
        .{ "--profile fast", "unknown profile" },
        .{ "--invocation -1", "not a non-negative integer" },
        .{ "--workers x", "not a list of positive integers" },
        .{ "--workers 1,,2", "not a list of positive integers" },
        .{ "--workers 1,2,", "not a list of positive integers" },
        .{ "--workers -1", "not a list of positive integers" },
        .{ "--workers +1", "not a list of positive integers" },
        .{ "--workers 99999999999999999999999", "not a list of positive integers" },
        .{ "--workers 0", "0 is outside 1..1024" },
        .{ "--workers 1025", "1025 is outside 1..1024" },
        .{ "--workers 2,4,2", "2 is given twice" },
        .{ "--workers 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16 counts" },
        .{ "--workers", "needs a value" },
        .{ "--variant", "needs a value" },
        .{ "--variant=", "needs a name" },
        .{ "--csv", "needs a value" },
        .{ "--bogus", "unknown argument" },
        .{ "--json=1", "takes no value" },
        .{ "positional", "unknown argument" },
    };
    inline for (cases) |case| {
        var diag = Diagnostic{};
        try testing.expectError(error.BadCommandLine, parse(comptime words(case[0]), &diag));
        try testing.expect(std.mem.indexOf(u8, diag.message(), case[1]) != null);
    }
}
