//! The `std.Io` implementation the io program is built for (build option `implementation`,
//! set by build.zig: one binary per implementation, runtime/bench/README.md "Io suite").
//!
//! | name | what | `workers` = |
//! |---|---|---|
//! | `zig.threaded` | `std.Io.Threaded` (Zig's standard library) | its `async_limit` (the pool size for `io.async`); `io.concurrent` tasks get a thread each, as Threaded must to give them the concurrency they ask for (a `concurrent_limit` would make them fail instead) |
//! | `zio` | the peer zio v0.17.0 through `zio.Runtime.io()` (a lazy package, build.zig.zon), with its default Linux backend (io_uring, epoll where io_uring is unavailable) | its executor count (the calling thread is executor 0) |
//! | `zio.epoll` | the same zio built with its `backend` option `epoll`: the kernel interface ampere.io, Tokio and Threaded use | as `zio` |
//! | `ampere.io` | Ampere's `std.Io` (`Runtime.io()`, issue 22) | its worker count |
//!
//! An `Instance` is built per worker count of the sweep (never inside a timed region) and
//! allocates through the program's counting allocator, so runtime-internal allocations are
//! counted as on the Tokio side.

const std = @import("std");
const builtin = @import("builtin");
const io_options = @import("io_options");
const output = @import("output.zig");

pub const name: []const u8 = io_options.implementation;
/// zio in either build (`zio`, `zio.epoll`): the same program and the same versions.
const is_zio = std.mem.eql(u8, name, "zio") or std.mem.eql(u8, name, "zio.epoll");
/// What the implementation is, for meta.json (`runtime_version`; zio's package and commit).
pub const version: []const u8 = io_options.version;
pub const zio_commit: ?[]const u8 = io_options.zio_commit;

/// The metadata JSON (`--meta`) of the io program and of the http server built for this
/// implementation: like ampere_bench's, with the implementation's versions. `http_server`
/// (the server's name) is written only when set: the io program's file has no such key.
pub const Meta = struct {
    schema_version: u32 = output.schema_version,
    runtime: []const u8 = name,
    variant: []const u8 = name,
    variant_settings: struct {} = .{},
    runtime_version: []const u8 = version,
    io_implementation: []const u8 = name,
    zio_version: ?[]const u8 = if (is_zio) version else null,
    zio_commit: ?[]const u8 = zio_commit,
    compiler: []const u8 = "zig",
    compiler_version: []const u8 = builtin.zig_version_string,
    tokio_version: ?[]const u8 = null,
    build_mode: []const u8 = @tagName(builtin.mode),
    target_cpu: []const u8 = builtin.cpu.model.name,
    allocator: []const u8,
    http_server: ?[]const u8 = null,
    machine: output.Machine,

    /// Every field in declaration order, `http_server` left out when null.
    pub fn jsonStringify(self: Meta, jw: anytype) !void {
        try jw.beginObject();
        inline for (std.meta.fields(Meta)) |field| {
            const value = @field(self, field.name);
            const skip = if (comptime std.mem.eql(u8, field.name, "http_server")) value == null else false;
            if (!skip) {
                try jw.objectField(field.name);
                try jw.write(value);
            }
        }
        try jw.endObject();
    }

    /// The file's text (indented, newline-terminated), allocated in `arena`; the machine
    /// read now.
    pub fn render(io: std.Io, arena: std.mem.Allocator, allocator: []const u8, http_server: ?[]const u8) std.Io.Writer.Error![]const u8 {
        var text = std.Io.Writer.Allocating.init(arena);
        const meta = Meta{ .allocator = allocator, .http_server = http_server, .machine = output.Machine.read(io, arena) };
        try std.json.Stringify.value(meta, .{ .whitespace = .indent_2 }, &text.writer);
        try text.writer.writeByte('\n');
        return text.written();
    }
};

pub const Instance = if (std.mem.eql(u8, name, "zig.threaded"))
    Threaded
else if (is_zio)
    @import("io_zio.zig").Instance
else if (std.mem.eql(u8, name, "ampere.io"))
    Ampere
else
    @compileError("unknown io implementation '" ++ name ++ "' (zig.threaded, zio, zio.epoll, ampere.io)");

const Threaded = struct {
    threaded: std.Io.Threaded,

    pub fn init(self: *Threaded, gpa: std.mem.Allocator, workers: u64) !void {
        self.threaded = std.Io.Threaded.init(gpa, .{ .async_limit = .limited(@intCast(workers)) });
    }

    pub fn io(self: *Threaded) std.Io {
        return self.threaded.io();
    }

    pub fn deinit(self: *Threaded) void {
        self.threaded.deinit();
    }
};

/// Ampere's `std.Io`: a runtime of `workers` workers and its `io()`. Built only with
/// `-Dio-ampere=true` (build.zig), which the lab turns on once `Runtime.io()` exists.
const Ampere = struct {
    const ampere = @import("ampere");
    runtime: *ampere.Runtime,

    pub fn init(self: *Ampere, gpa: std.mem.Allocator, workers: u64) !void {
        if (comptime !@hasDecl(ampere.Runtime, "io")) @compileError("ampere.Io not built yet: Runtime has no io() (issue 22)");
        self.runtime = try ampere.Runtime.init(gpa, .{ .workers = @intCast(workers) });
    }

    pub fn io(self: *Ampere) std.Io {
        return self.runtime.io();
    }

    pub fn deinit(self: *Ampere) void {
        self.runtime.deinit();
    }

    /// The runtime's event counts so far (`Runtime.metrics()`, JSON), for diagnosis.
    pub fn writeMetrics(self: *Ampere, out: *std.Io.Writer) std.Io.Writer.Error!void {
        const snapshot = self.runtime.metrics();
        try snapshot.writeJson(out);
    }
};
