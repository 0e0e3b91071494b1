//! Runtime variants: named configurations of a runtime (`ampere`, `ampere.nospin`, `tokio`,
//! ...), defined in `variants.json` (embedded at build time through build.zig, like
//! constants.json) and selected with `--variant NAME`. Same rules and messages as the Rust
//! side (rust_bench/src/variants.rs):
//! - top-level keys: `variants` (required) and `_comment`; each variant is an object with
//!   exactly `runtime` (a known runtime), `settings` (an object) and `description` (a string);
//! - a name matches `[a-z][a-z0-9_]*(\.[a-z0-9_]+)?` and its part before the dot is its
//!   `runtime`;
//! - a setting must be one of `known_settings` for that runtime, with an integer value in
//!   the setting's range.
//! The whole file is checked whichever variant is selected, so a bad entry fails every run,
//! not only the runs that select it. Selecting an unknown variant, or a variant of the other
//! runtime, is an error (exit 2). Object keys are visited in byte order (serde_json's map
//! order on the Rust side), so both programs report the same first problem of a file.
//!
//! The selected `Variant` is a plain value: its name borrows the caller's string (the command
//! line argument or the program's base name) and its settings are stored by index into
//! `known_settings`, so they are written in that (canonical) order on both sides.

const std = @import("std");
const ampere = @import("ampere");

pub const embedded_json: []const u8 = @embedFile("variants.json");

/// A setting a variant may give a runtime, and its accepted range.
pub const Setting = struct {
    runtime: []const u8,
    name: []const u8,
    min: u64,
    max: u64,
};

/// Every setting a variant may carry, in canonical output order. ampere's map onto
/// `Runtime.Options` fields of the same name; Tokio's onto `Builder` methods of the same name.
pub const known_settings = [_]Setting{
    .{ .runtime = "ampere", .name = "spin_before_park_ns", .min = 0, .max = std.time.ns_per_s },
    .{ .runtime = "ampere", .name = "global_queue_interval", .min = 1, .max = std.math.maxInt(u32) },
    .{ .runtime = "ampere", .name = "event_interval", .min = 1, .max = std.math.maxInt(u32) },
    .{ .runtime = "tokio", .name = "global_queue_interval", .min = 1, .max = std.math.maxInt(u32) },
    .{ .runtime = "tokio", .name = "event_interval", .min = 1, .max = std.math.maxInt(u32) },
    // How Tokio's io twins collect a group of tasks (rust_bench/src/io.rs `GroupKind`).
    .{ .runtime = "tokio", .name = "io_group", .min = 0, .max = 2 },
};

pub const known_runtimes = [_][]const u8{ "ampere", "tokio" };

/// Most keys of one JSON object of the file (variants, or settings of one variant).
pub const keys_max = 64;

/// The selected variant.
pub const Variant = struct {
    /// The variant's name (borrowed), e.g. `ampere.nospin`.
    name: []const u8,
    /// Its base runtime (static), e.g. `ampere`.
    runtime: []const u8,
    /// Value per entry of `known_settings`; null where the variant does not set it.
    values: [known_settings.len]?u64 = @splat(null),

    /// `Runtime.Options` with ampere's defaults, the variant's settings and `workers`.
    pub fn runtimeOptions(self: *const Variant, workers: u32) ampere.Runtime.Options {
        std.debug.assert(std.mem.eql(u8, self.runtime, "ampere"));
        var options = ampere.Runtime.Options{ .workers = workers };
        for (known_settings, self.values) |setting, value_or_null| {
            const value = value_or_null orelse continue;
            const eql = std.mem.eql;
            if (eql(u8, setting.name, "spin_before_park_ns")) {
                options.spin_before_park_ns = value;
            } else if (eql(u8, setting.name, "global_queue_interval")) {
                options.global_queue_interval = @intCast(value); // range-checked at load
            } else if (eql(u8, setting.name, "event_interval")) {
                options.event_interval = @intCast(value);
            } else unreachable; // an ampere setting without a mapping: add it here
        }
        return options;
    }
};

pub const Error = error{InvalidVariant};

/// The one-line message of the last failure (printed as `error: <message>`).
pub const Diagnostic = @import("diagnostic.zig").Diagnostic(Error, error.InvalidVariant, 512);

/// Whether `name` matches `[a-z][a-z0-9_]*(\.[a-z0-9_]+)?`.
pub fn validName(name: []const u8) bool {
    if (name.len == 0 or !std.ascii.isLower(name[0])) return false;
    var dots: usize = 0;
    for (name, 0..) |char, i| {
        if (char == '.') {
            dots += 1;
            if (dots > 1 or i + 1 == name.len) return false;
        } else if (!std.ascii.isLower(char) and !std.ascii.isDigit(char) and char != '_') {
            return false;
        }
    }
    return true;
}

/// The part of a variant name before the dot (the whole name when it has none).
pub fn baseName(name: []const u8) []const u8 {
    const dot = std.mem.indexOfScalar(u8, name, '.') orelse return name;
    return name[0..dot];
}

/// Selects variant `name` for the program running `runtime` from the embedded file.
pub fn select(scratch: std.mem.Allocator, runtime: []const u8, name: []const u8, diag: *Diagnostic) Error!Variant {
    return selectFrom(scratch, embedded_json, runtime, name, diag);
}

/// Checks the whole variants file `text`, then selects `name`; `scratch` holds the JSON
/// tree only during the call.
pub fn selectFrom(scratch: std.mem.Allocator, text: []const u8, runtime: []const u8, name: []const u8, diag: *Diagnostic) Error!Variant {
    var scanner = std.json.Scanner.initCompleteInput(scratch, text);
    defer scanner.deinit();
    var json_diag = std.json.Diagnostics{};
    scanner.enableDiagnostics(&json_diag);
    const parsed = std.json.parseFromTokenSource(std.json.Value, scratch, &scanner, .{}) catch |err| {
        return diag.fail("variants.json: line {d}: {s}", .{ json_diag.getLine(), @errorName(err) });
    };
    defer parsed.deinit();
    const root = switch (parsed.value) {
        .object => |o| o,
        else => return diag.fail("variants.json: no \"variants\" object", .{}),
    };
    var key_buffer: [keys_max][]const u8 = undefined;
    for (try sortedKeys(root, &key_buffer, "the top level", diag)) |key| {
        if (!std.mem.eql(u8, key, "variants") and !std.mem.eql(u8, key, "_comment")) {
            return diag.fail("variants.json: unknown top-level key '{s}'", .{key});
        }
    }
    const table = switch (root.get("variants") orelse .null) {
        .object => |o| o,
        else => return diag.fail("variants.json: no \"variants\" object", .{}),
    };
    const names = try sortedKeys(table, &key_buffer, "\"variants\"", diag);
    var selected: ?Variant = null;
    for (names) |key| {
        const variant = try check(key, table.get(key).?, diag);
        if (std.mem.eql(u8, variant.name, name)) selected = variant;
    }
    var found = selected orelse {
        var list: [256]u8 = undefined;
        return diag.fail("--variant: unknown variant '{s}' (variants.json has: {s})", .{ name, join(names, &list) });
    };
    if (!std.mem.eql(u8, found.runtime, runtime)) {
        return diag.fail("--variant {s}: a variant of {s}; this program runs {s} variants only", .{ name, found.runtime, runtime });
    }
    found.name = name; // borrow the caller's string: the JSON tree is freed on return
    return found;
}

/// Checks one entry of `variants`; the returned name borrows the JSON tree.
fn check(name: []const u8, value: std.json.Value, diag: *Diagnostic) Error!Variant {
    if (!validName(name)) {
        return diag.fail("variants.json: variant '{s}': a name must match [a-z][a-z0-9_]*(.[a-z0-9_]+)?", .{name});
    }
    const object = switch (value) {
        .object => |o| o,
        else => return diag.fail("variants.json: variant '{s}': expected an object", .{name}),
    };
    var key_buffer: [keys_max][]const u8 = undefined;
    for (try sortedKeys(object, &key_buffer, name, diag)) |key| {
        const eql = std.mem.eql;
        if (!eql(u8, key, "runtime") and !eql(u8, key, "settings") and !eql(u8, key, "description")) {
            return diag.fail("variants.json: variant '{s}': unknown key '{s}' (runtime, settings, description)", .{ name, key });
        }
    }
    const runtime_text = switch (object.get("runtime") orelse .null) {
        .string => |s| s,
        else => return diag.fail("variants.json: variant '{s}': \"runtime\" must be a string", .{name}),
    };
    const runtime = staticRuntime(runtime_text) orelse
        return diag.fail("variants.json: variant '{s}': unknown runtime '{s}' (ampere, tokio)", .{ name, runtime_text });
    if (!std.mem.eql(u8, baseName(name), runtime)) {
        return diag.fail("variants.json: variant '{s}': runtime is '{s}', but the name's base is '{s}'", .{ name, runtime, baseName(name) });
    }
    switch (object.get("description") orelse .null) {
        .string => |s| if (s.len == 0) return diag.fail("variants.json: variant '{s}': \"description\" is empty", .{name}),
        else => return diag.fail("variants.json: variant '{s}': \"description\" must be a string", .{name}),
    }
    const settings = switch (object.get("settings") orelse .null) {
        .object => |o| o,
        else => return diag.fail("variants.json: variant '{s}': \"settings\" must be an object", .{name}),
    };
    var variant = Variant{ .name = name, .runtime = runtime };
    for (try sortedKeys(settings, &key_buffer, name, diag)) |key| {
        const index = settingIndex(runtime, key) orelse
            return diag.fail("variants.json: variant '{s}': unknown setting '{s}' for {s}", .{ name, key, runtime });
        const setting = known_settings[index];
        const number: ?u64 = switch (settings.get(key).?) {
            .integer => |i| if (i >= 0) @intCast(i) else null,
            else => null,
        };
        const v = number orelse
            return diag.fail("variants.json: variant '{s}': {s} must be a non-negative integer", .{ name, key });
        if (v < setting.min or v > setting.max) {
            return diag.fail("variants.json: variant '{s}': {s} = {d} is outside {d}..{d}", .{ name, key, v, setting.min, setting.max });
        }
        variant.values[index] = v;
    }
    return variant;
}

fn staticRuntime(text: []const u8) ?[]const u8 {
    for (known_runtimes) |runtime| if (std.mem.eql(u8, runtime, text)) return runtime;
    return null;
}

fn settingIndex(runtime: []const u8, name: []const u8) ?usize {
    for (known_settings, 0..) |setting, i| {
        if (std.mem.eql(u8, setting.runtime, runtime) and std.mem.eql(u8, setting.name, name)) return i;
    }
    return null;
}

/// The keys of `object` in byte order, in `buffer`.
fn sortedKeys(object: std.json.ObjectMap, buffer: *[keys_max][]const u8, where: []const u8, diag: *Diagnostic) Error![]const []const u8 {
    const keys = object.keys();
    if (keys.len > keys_max) return diag.fail("variants.json: {s}: more than {d} keys", .{ where, keys_max });
    const sorted = buffer[0..keys.len];
    @memcpy(sorted, keys);
    std.mem.sort([]const u8, sorted, {}, lessThan);
    return sorted;
}

fn lessThan(_: void, a: []const u8, b: []const u8) bool {
    return std.mem.lessThan(u8, a, b);
}

/// `a, b, c` (truncated to the buffer).
fn join(keys: []const []const u8, buffer: []u8) []const u8 {
    var w = std.Io.Writer.fixed(buffer);
    for (keys, 0..) |key, i| {
        if (i > 0) w.writeAll(", ") catch break;
        w.writeAll(key) catch break;
    }
    return w.buffered();
}

const testing = std.testing;

test "the embedded file defines ampere, ampere.nospin and tokio" {
    var diag = Diagnostic{};
    const base = try select(testing.allocator, "ampere", "ampere", &diag);
    try testing.expectEqualStrings("ampere", base.runtime);
    const defaults = ampere.Runtime.Options{};
    try testing.expectEqual(defaults.spin_before_park_ns, base.runtimeOptions(3).spin_before_park_ns);
    try testing.expectEqual(@as(u32, 3), base.runtimeOptions(3).workers);
    const nospin = try select(testing.allocator, "ampere", "ampere.nospin", &diag);
    try testing.expectEqualStrings("ampere.nospin", nospin.name);
    try testing.expectEqual(@as(u64, 0), nospin.runtimeOptions(1).spin_before_park_ns);
    try testing.expectEqual(defaults.global_queue_interval, nospin.runtimeOptions(1).global_queue_interval);
    // tokio is defined, but is not ampere's.
    try testing.expectError(error.InvalidVariant, select(testing.allocator, "ampere", "tokio", &diag));
    try testing.expectEqualStrings("--variant tokio: a variant of tokio; this program runs ampere variants only", diag.message());
    const tokio = try select(testing.allocator, "tokio", "tokio", &diag);
    try testing.expectEqualStrings("tokio", tokio.runtime);
}

test "unknown variant names the known ones" {
    var diag = Diagnostic{};
    try testing.expectError(error.InvalidVariant, select(testing.allocator, "ampere", "ampere.fast", &diag));
    try testing.expectEqualStrings("--variant: unknown variant 'ampere.fast' (variants.json has: ampere, ampere.ab, ampere.nospin, tokio, tokio.joinset, tokio.tracker)", diag.message());
}

test "settings map onto Runtime.Options" {
    const text =
        \\{"variants": {"ampere.x": {"runtime": "ampere", "description": "d",
        \\  "settings": {"event_interval": 7, "spin_before_park_ns": 5, "global_queue_interval": 9}}}}
    ;
    var diag = Diagnostic{};
    const v = try selectFrom(testing.allocator, text, "ampere", "ampere.x", &diag);
    const o = v.runtimeOptions(2);
    try testing.expectEqual(@as(u64, 5), o.spin_before_park_ns);
    try testing.expectEqual(@as(u32, 9), o.global_queue_interval);
    try testing.expectEqual(@as(u32, 7), o.event_interval);
    // Stored in canonical (known_settings) order, whatever the file's order.
    try testing.expectEqual(@as(?u64, 5), v.values[0]);
    try testing.expectEqual(@as(?u64, 7), v.values[2]);
}

test "bad files and selections are one-line errors" {
    const ok_tail = "\"description\": \"d\"}}}";
    const cases = [_]struct { text: []const u8, name: []const u8, needle: []const u8 }{
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {\"spin\": 1}, " ++ ok_tail, .name = "ampere", .needle = "variant 'ampere': unknown setting 'spin' for ampere" },
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {\"spin_before_park_ns\": -1}, " ++ ok_tail, .name = "ampere", .needle = "must be a non-negative integer" },
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {\"event_interval\": 0}, " ++ ok_tail, .name = "ampere", .needle = "event_interval = 0 is outside 1..4294967295" },
        .{ .text = "{\"variants\": {\"tokio.x\": {\"runtime\": \"tokio\", \"settings\": {\"spin_before_park_ns\": 0}, " ++ ok_tail, .name = "tokio.x", .needle = "unknown setting 'spin_before_park_ns' for tokio" },
        .{ .text = "{\"variants\": {\"ampere.x\": {\"runtime\": \"tokio\", \"settings\": {}, " ++ ok_tail, .name = "ampere.x", .needle = "runtime is 'tokio', but the name's base is 'ampere'" },
        .{ .text = "{\"variants\": {\"Ampere\": {\"runtime\": \"ampere\", \"settings\": {}, " ++ ok_tail, .name = "Ampere", .needle = "a name must match" },
        .{ .text = "{\"variants\": {\"go\": {\"runtime\": \"go\", \"settings\": {}, " ++ ok_tail, .name = "go", .needle = "unknown runtime 'go'" },
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {}, \"extra\": 1, " ++ ok_tail, .name = "ampere", .needle = "unknown key 'extra'" },
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {}}}}", .name = "ampere", .needle = "\"description\" must be a string" },
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": [], " ++ ok_tail, .name = "ampere", .needle = "\"settings\" must be an object" },
        .{ .text = "{\"variant\": {}}", .name = "ampere", .needle = "unknown top-level key 'variant'" },
        .{ .text = "{\n\"variants\": [", .name = "ampere", .needle = "variants.json: line 2" },
        // A bad entry fails even when another variant is selected.
        .{ .text = "{\"variants\": {\"ampere\": {\"runtime\": \"ampere\", \"settings\": {}, \"description\": \"d\"}, \"tokio\": {\"runtime\": \"tokio\", \"settings\": {\"x\": 1}, " ++ ok_tail, .name = "ampere", .needle = "unknown setting 'x' for tokio" },
    };
    for (cases) |case| {
        var diag = Diagnostic{};
        try testing.expectError(error.InvalidVariant, selectFrom(testing.allocator, case.text, "ampere", case.name, &diag));
        if (std.mem.indexOf(u8, diag.message(), case.needle) == null) {
            std.debug.print("message: {s}\nexpected: {s}\n", .{ diag.message(), case.needle });
            return error.TestUnexpectedResult;
        }
        try testing.expect(std.mem.indexOfScalar(u8, diag.message(), '\n') == null);
    }
}

test "names" {
    for ([_][]const u8{ "ampere", "ampere.nospin", "tokio.gqi_31", "a1" }) |name| try testing.expect(validName(name));
    for ([_][]const u8{ "", "1a", "Ampere", "ampere.", "a.b.c", ".x", "a-b", "a.B" }) |name| try testing.expect(!validName(name));
    try testing.expectEqualStrings("ampere", baseName("ampere.nospin"));
    try testing.expectEqualStrings("tokio", baseName("tokio"));
}
