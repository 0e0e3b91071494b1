//! Benchmark constants: `constants.json` (embedded at build time through build.zig) is the
//! only place sizes are written.
//!
//! A profile (`full` or `quick`) is selected, then `--set key=value` overrides are applied in
//! command-line order. Same rules as the Rust side (rust_bench/src/constants.rs):
//! - every field of `Constants` must be present in the profile and no other key may be;
//! - scalar keys are non-negative integers, the list key (`echo_batch_sizes`) a non-empty list
//!   of at most `list_capacity` integers; overrides use `key=INT` or `key=INT,INT,...`;
//! - an unknown key, a malformed value or a value that would make a benchmark do no work is
//!   an error (exit 2).
//! Parsing allocates only temporarily (the JSON tree); `Constants` itself is a plain value.

const std = @import("std");

pub const embedded_json: []const u8 = @embedFile("constants.json");

/// Bound of list constants (TIGER_STYLE: explicit sizes); the Rust side checks the same bound.
pub const list_capacity = 16;

/// A bounded list of integers.
pub const List = struct {
    buffer: [list_capacity]u64 = undefined,
    len: usize = 0,

    pub fn items(self: *const List) []const u64 {
        return self.buffer[0..self.len];
    }
};

/// Effective constants of one run. Field order is the canonical output order: scalars in
/// constants.json order, then list keys (the Rust side's `KEYS`).
pub const Constants = struct {
    warmup: u64,
    iterations: u64,
    sync_ops: u64,
    channel_ops: u64,
    async_ops: u64,
    task_ops: u64,
    num_workers: u64,
    mpmc_buffer: u64,
    mpmc_producers: u64,
    mpmc_consumers: u64,
    mpsc_producers: u64,
    contended_mutex_tasks: u64,
    contended_sem_tasks: u64,
    contended_sem_permits: u64,
    rwlock_readers: u64,
    rwlock_writers: u64,
    rwlock_ops_per_task: u64,
    semaphore_permits: u64,
    broadcast_capacity: u64,
    broadcast_receivers: u64,
    spawn_batch_size: u64,
    yield_tasks: u64,
    yield_per_task: u64,
    ping_pong_rounds: u64,
    chain_length: u64,
    echo_batches: u64,
    echo_warmup_n1: u64,
    echo_warmup: u64,
    echo_payload_bytes: u64,
    echo_payload_buffers: u64,
    echo_sweep_n: u64,
    echo_sweep_min_bytes: u64,
    echo_sweep_max_bytes: u64,
    echo_shared_max_bytes: u64,
    net_rounds: u64,
    net_stream_bytes: u64,
    net_connect_ops: u64,
    /// The io suite (runtime/bench/README.md, "Io suite"): io_mutex_contended's tasks,
    /// io_fan_in's producers and io_fan_out's consumers, the items they pass, their queue's capacity,
    /// io_spawn_group's tasks, io_sleep's tasks, round trips per connection of the io TCP rows
    /// and connections per iteration of io_tcp_connect.
    io_mutex_tasks: u64,
    io_fan_tasks: u64,
    io_fan_items: u64,
    io_queue_capacity: u64,
    io_group_tasks: u64,
    io_sleep_tasks: u64,
    io_net_rounds: u64,
    io_connect_ops: u64,
    echo_batch_sizes: List,

    pub const fields = std.meta.fields(Constants);

    /// Loads `profile` from the embedded constants file.
    pub fn load(scratch: std.mem.Allocator, profile: []const u8, diag: *Diagnostic) Error!Constants {
        return loadFrom(scratch, embedded_json, profile, diag);
    }

    /// Loads `profile` from the text of a constants file; `scratch` holds the JSON tree only
    /// during the call.
    pub fn loadFrom(scratch: std.mem.Allocator, text: []const u8, profile: []const u8, diag: *Diagnostic) Error!Constants {
        var scanner = std.json.Scanner.initCompleteInput(scratch, text);
        defer scanner.deinit();
        var json_diag = std.json.Diagnostics{};
        scanner.enableDiagnostics(&json_diag);
        const parsed = std.json.parseFromTokenSource(std.json.Value, scratch, &scanner, .{}) catch |err| {
            return diag.fail("constants.json: line {d}: {s}", .{ json_diag.getLine(), @errorName(err) });
        };
        defer parsed.deinit();
        const root = switch (parsed.value) {
            .object => |o| o,
            else => return diag.fail("constants.json: no \"profiles\" object", .{}),
        };
        const profiles = switch (root.get("profiles") orelse .null) {
            .object => |o| o,
            else => return diag.fail("constants.json: no \"profiles\" object", .{}),
        };
        const table = switch (profiles.get(profile) orelse .null) {
            .object => |o| o,
            else => return diag.fail("unknown profile '{s}'", .{profile}),
        };
        var constants: Constants = undefined;
        var iterator = table.iterator();
        while (iterator.next()) |entry| {
            const key = entry.key_ptr.*;
            if (!isKey(key)) return diag.fail("constants.json: profile {s}: unknown key '{s}'", .{ profile, key });
            try constants.setJson(key, entry.value_ptr.*, diag);
        }
        inline for (fields) |field| {
            if (!table.contains(field.name)) {
                return diag.fail("constants.json: profile {s}: missing key '{s}'", .{ profile, field.name });
            }
        }
        try constants.validate(diag);
        return constants;
    }

    fn setJson(self: *Constants, key: []const u8, value: std.json.Value, diag: *Diagnostic) Error!void {
        inline for (fields) |field| {
            if (std.mem.eql(u8, field.name, key)) {
                if (field.type == List) {
                    const array = switch (value) {
                        .array => |a| a,
                        else => return diag.fail("constants.json: {s}: expected a list", .{key}),
                    };
                    var list = List{};
                    for (array.items) |item| {
                        if (list.len == list_capacity) return diag.fail("constants.json: {s}: more than {d} values", .{ key, list_capacity });
                        list.buffer[list.len] = jsonInt(item) orelse return diag.fail("constants.json: {s}: expected integers", .{key});
                        list.len += 1;
                    }
                    @field(self, field.name) = list;
                } else {
                    @field(self, field.name) = jsonInt(value) orelse return diag.fail("constants.json: {s}: expected an integer", .{key});
                }
                return;
            }
        }
        unreachable; // `key` was checked with isKey.
    }

    /// Applies one `key=value` override (integer, or comma-separated integers for a list
    /// key), then re-validates.
    pub fn applyOverride(self: *Constants, assignment: []const u8, diag: *Diagnostic) Error!void {
        const eq = std.mem.indexOfScalar(u8, assignment, '=') orelse
            return diag.fail("--set expects KEY=VALUE, got '{s}'", .{assignment});
        const key = assignment[0..eq];
        const value = assignment[eq + 1 ..];
        if (!isKey(key)) return diag.fail("--set: unknown key '{s}'", .{key});
        inline for (fields) |field| {
            if (std.mem.eql(u8, field.name, key)) {
                if (field.type == List) {
                    var list = List{};
                    var parts = std.mem.splitScalar(u8, value, ',');
                    while (parts.next()) |part| {
                        if (list.len == list_capacity) return diag.fail("--set {s}: more than {d} values", .{ key, list_capacity });
                        list.buffer[list.len] = try parseInt(key, part, diag);
                        list.len += 1;
                    }
                    @field(self, field.name) = list;
                } else {
                    @field(self, field.name) = try parseInt(key, value, diag);
                }
            }
        }
        try self.validate(diag);
    }

    /// Rejects values that would make a benchmark do no work or be ill-formed (the same
    /// checks and messages as the Rust side).
    pub fn validate(self: *const Constants, diag: *Diagnostic) Error!void {
        inline for (fields) |field| {
            // Warmup counts may be 0; every other scalar must be positive.
            const may_be_zero = comptime isWarmupKey(field.name);
            if (field.type == u64 and !may_be_zero) {
                if (@field(self, field.name) == 0) return diag.fail("{s} must be at least 1", .{field.name});
            }
        }
        const c = self;
        const Divides = struct { total_key: []const u8, total: u64, part_key: []const u8, part: u64 };
        const divides = [_]Divides{
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "mpmc_producers", .part = c.mpmc_producers },
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "mpmc_consumers", .part = c.mpmc_consumers },
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "mpsc_producers", .part = c.mpsc_producers },
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "contended_mutex_tasks", .part = c.contended_mutex_tasks },
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "contended_sem_tasks", .part = c.contended_sem_tasks },
            .{ .total_key = "task_ops", .total = c.task_ops, .part_key = "spawn_batch_size", .part = c.spawn_batch_size },
            .{ .total_key = "async_ops", .total = c.async_ops, .part_key = "io_mutex_tasks", .part = c.io_mutex_tasks },
            .{ .total_key = "io_fan_items", .total = c.io_fan_items, .part_key = "io_fan_tasks", .part = c.io_fan_tasks },
        };
        for (divides) |d| {
            if (d.total < d.part) {
                return diag.fail("{s} ({d}) must be at least {s} ({d})", .{ d.total_key, d.total, d.part_key, d.part });
            }
        }
        const sent = c.mpmc_producers * (c.async_ops / c.mpmc_producers);
        const received = c.mpmc_consumers * (c.async_ops / c.mpmc_consumers);
        if (sent != received) {
            return diag.fail("channel_mpmc would send {d} but receive {d} values: choose async_ops divisible by mpmc_producers and mpmc_consumers", .{ sent, received });
        }
        const sizes = c.echo_batch_sizes.items();
        if (sizes.len == 0 or std.mem.indexOfScalar(u64, sizes, 0) != null) {
            return diag.fail("echo_batch_sizes must be a non-empty list of positive integers", .{});
        }
        if (c.echo_sweep_max_bytes < c.echo_sweep_min_bytes or c.echo_shared_max_bytes < c.echo_sweep_min_bytes) {
            return diag.fail("echo_sweep_max_bytes and echo_shared_max_bytes must be at least echo_sweep_min_bytes", .{});
        }
    }
};

pub const Error = error{InvalidConstants};

/// The one-line message of the last failure (printed as `error: <message>`).
pub const Diagnostic = @import("diagnostic.zig").Diagnostic(Error, error.InvalidConstants, 256);

fn isWarmupKey(key: []const u8) bool {
    const eql = std.mem.eql;
    return eql(u8, key, "warmup") or eql(u8, key, "echo_warmup_n1") or eql(u8, key, "echo_warmup");
}

fn isKey(key: []const u8) bool {
    inline for (Constants.fields) |field| {
        if (std.mem.eql(u8, field.name, key)) return true;
    }
    return false;
}

fn jsonInt(value: std.json.Value) ?u64 {
    return switch (value) {
        .integer => |i| if (i >= 0) @intCast(i) else null,
        else => null,
    };
}

fn parseInt(key: []const u8, text: []const u8, diag: *Diagnostic) Error!u64 {
    const trimmed = std.mem.trim(u8, text, " ");
    return std.fmt.parseInt(u64, trimmed, 10) catch
        diag.fail("--set {s}: '{s}' is not a non-negative integer", .{ key, text });
}

/// Sizes of a doubling sweep `min, 2·min, 4·min, ... <= max` (at most 64 of them).
pub const Sweep = struct {
    next_size: u64,
    max: u64,

    pub fn init(min: u64, max: u64) Sweep {
        std.debug.assert(min >= 1 and max >= min);
        return .{ .next_size = min, .max = max };
    }

    pub fn next(self: *Sweep) ?u64 {
        if (self.next_size == 0 or self.next_size > self.max) return null;
        const size = self.next_size;
        self.next_size = std.math.mul(u64, size, 2) catch 0;
        return size;
    }
};

const testing = std.testing;

test "loads both profiles" {
    var diag = Diagnostic{};
    const full = try Constants.load(testing.allocator, "full", &diag);
    try testing.expectEqual(@as(u64, 1_000_000), full.sync_ops);
    try testing.expectEqualSlices(u64, &.{ 1, 10, 100 }, full.echo_batch_sizes.items());
    const quick = try Constants.load(testing.allocator, "quick", &diag);
    try testing.expect(quick.sync_ops < full.sync_ops);
    try testing.expectError(error.InvalidConstants, Constants.load(testing.allocator, "nope", &diag));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "unknown profile") != null);
}

test "overrides apply and validate" {
    var diag = Diagnostic{};
    var c = try Constants.load(testing.allocator, "quick", &diag);
    try c.applyOverride("sync_ops=123", &diag);
    try testing.expectEqual(@as(u64, 123), c.sync_ops);
    try c.applyOverride("echo_batch_sizes=1,10,7", &diag);
    try testing.expectEqualSlices(u64, &.{ 1, 10, 7 }, c.echo_batch_sizes.items());
    const cases = [_]struct { set: []const u8, needle: []const u8 }{
        .{ .set = "no_such_key=1", .needle = "unknown key" },
        .{ .set = "sync_ops=abc", .needle = "not a non-negative integer" },
        .{ .set = "sync_ops=1,2", .needle = "not a non-negative integer" },
        .{ .set = "sync_ops", .needle = "KEY=VALUE" },
        .{ .set = "iterations=0", .needle = "at least 1" },
        .{ .set = "echo_batch_sizes=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", .needle = "more than 16" },
    };
    for (cases) |case| {
        var scratch = c;
        try testing.expectError(error.InvalidConstants, scratch.applyOverride(case.set, &diag));
        try testing.expect(std.mem.indexOf(u8, diag.message(), case.needle) != null);
    }
}

test "rejects bad files" {
    var diag = Diagnostic{};
    try testing.expectError(error.InvalidConstants, Constants.loadFrom(testing.allocator, "{\"profiles\": {\"p\": {\"warmup\": 1}}}", "p", &diag));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "missing key") != null);
    try testing.expectError(error.InvalidConstants, Constants.loadFrom(testing.allocator, "{\"profiles\": {\"p\": {\"bogus\": 1}}}", "p", &diag));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "unknown key") != null);
    try testing.expectError(error.InvalidConstants, Constants.loadFrom(testing.allocator, "{\n\"profiles\": [", "p", &diag));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "line 2") != null);
}

test "sweep doubles" {
    var sweep = Sweep.init(8, 100);
    var seen: [8]u64 = undefined;
    var n: usize = 0;
    while (sweep.next()) |size| : (n += 1) seen[n] = size;
    try testing.expectEqualSlices(u64, &.{ 8, 16, 32, 64 }, seen[0..n]);
}
