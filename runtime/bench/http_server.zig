//! http_server: the http suite's server, one source on `std.http.Server` built once per `std.Io`
//! implementation (io_impl.zig; binaries `http_server_threaded`, `http_server_zio`,
//! `http_server_ampere`). The load comes from `wrk`, started by the orchestrator
//! (analysis/httpbench.py); this program only serves.
//!
//! Routes (the same bytes as the hyper twin, rust_bench/src/bin/hyper_server.rs):
//!
//! | request | response |
//! |---|---|
//! | `GET /plaintext` | 200, `content-type: text/plain`, body `Hello, World!` (keep-alive) |
//! | `GET /bytes/16384` | 200, `content-type: application/octet-stream`, 16,384 bytes `a`..`z` repeating |
//! | anything else | 404, body `not found` |
//!
//! Protocol (runtime/bench/README.md, "Http suite"):
//!
//!     http_server_<impl> [--port P] [--workers W] [--meta PATH]
//!
//! binds 127.0.0.1:P (0 = any free port), prints `listening <port>` on stdout once bound, and
//! serves until its stdin reaches end of file; then it stops accepting, cancels the connection
//! tasks that are left (wrk has closed its connections by then), prints `requests <N>` (the
//! responses it wrote in full) and exits 0. `--meta PATH` writes the metadata JSON first
//! (atomically). Exit 2 on a bad command line, 1 when the server cannot start. On ampere.io
//! it also prints the runtime's event counts (`Runtime.metrics()`) as one `metrics {...}`
//! line on stderr at exit, for diagnosis.
//!
//! Concurrency: a driver task (`io.concurrent`) listens and waits for stdin; an accept task
//! starts one task per connection in an `Io.Group` (`Group.concurrent`), each running the
//! keep-alive loop of `std.http.Server` with 8 KiB read and write buffers on its stack.

const std = @import("std");
const impl = @import("io_impl.zig");
const output = @import("output.zig");
const SystemAllocator = @import("SystemAllocator.zig");

const Io = std.Io;
const assert = std.debug.assert;

pub const plaintext_body = "Hello, World!";
pub const bytes_len = 16384;
/// The body of `/bytes/16384`: `a`..`z` repeating.
pub const bytes_body: [bytes_len]u8 = blk: {
    @setEvalBranchQuota(bytes_len * 4);
    var body: [bytes_len]u8 = undefined;
    for (&body, 0..) |*byte, index| byte.* = 'a' + @as(u8, @intCast(index % 26));
    break :blk body;
};
const not_found_body = "not found";

/// What a request gets (the routing table of the module doc).
pub const Route = enum {
    plaintext,
    bytes,
    not_found,

    pub fn of(method: std.http.Method, target: []const u8) Route {
        if (method != .GET) return .not_found;
        if (std.mem.eql(u8, target, "/plaintext")) return .plaintext;
        if (std.mem.eql(u8, target, "/bytes/16384")) return .bytes;
        return .not_found;
    }
};

const buffer_bytes = 8 * 1024;

/// The listening socket, the connection tasks and the served-request count.
pub const Server = struct {
    io: Io,
    listener: Io.net.Server,
    connections: Io.Group = .init,
    /// Set by `stop` before its wake-up connection (release); read by the accept task after
    /// each accept (acquire).
    stopping: std.atomic.Value(bool) = .init(false),
    /// Responses written and flushed in full (monotonic: read after the tasks are done).
    requests: std.atomic.Value(u64) = .init(0),
    /// The first error that ended the accept loop (not a connection's: a client may reset).
    accept_error: ?anyerror = null,

    pub fn listen(io: Io, port_wanted: u16) !Server {
        const address = Io.net.IpAddress.parseIp4("127.0.0.1", port_wanted) catch unreachable; // a literal
        return .{ .io = io, .listener = try address.listen(io, .{ .kernel_backlog = 1024, .reuse_address = true }) };
    }

    pub fn port(self: *const Server) u16 {
        return self.listener.socket.address.getPort();
    }

    pub fn acceptLoop(self: *Server) void {
        const io = self.io;
        while (true) {
            const stream = self.listener.accept(io) catch |err| {
                self.accept_error = err;
                return;
            };
            if (self.stopping.load(.acquire)) return stream.close(io);
            setNoDelay(stream) catch {};
            self.connections.concurrent(io, serveConnection, .{ self, stream }) catch |err| {
                stream.close(io);
                self.accept_error = err;
                return;
            };
        }
    }

    /// One connection's keep-alive loop; ends when the client closes (or resets) it.
    fn serveConnection(self: *Server, stream: Io.net.Stream) Io.Cancelable!void {
        const io = self.io;
        defer stream.close(io);
        var read_buffer: [buffer_bytes]u8 = undefined;
        var write_buffer: [buffer_bytes]u8 = undefined;
        var reader = stream.reader(io, &read_buffer);
        var writer = stream.writer(io, &write_buffer);
        var http = std.http.Server.init(&reader.interface, &writer.interface);
        while (true) {
            var request = http.receiveHead() catch return; // closed, reset or malformed
            respond(&request) catch return;
            _ = self.requests.fetchAdd(1, .monotonic);
        }
    }

    /// Stops accepting (one more connection wakes the accept task, which then returns),
    /// cancels the connection tasks still running, closes the listener and returns the
    /// served-request count.
    pub fn stop(self: *Server, accept_task: *Io.Future(void)) u64 {
        const io = self.io;
        self.stopping.store(true, .release);
        const address = self.listener.socket.address;
        if (address.connect(io, .{ .mode = .stream })) |poke| poke.close(io) else |_| {}
        accept_task.await(io);
        self.connections.cancel(io);
        self.listener.deinit(io);
        return self.requests.load(.monotonic);
    }
};

pub fn respond(request: *std.http.Server.Request) !void {
    switch (Route.of(request.head.method, request.head.target)) {
        .plaintext => try request.respond(plaintext_body, .{
            .extra_headers = &.{.{ .name = "content-type", .value = "text/plain" }},
        }),
        .bytes => try request.respond(&bytes_body, .{
            .extra_headers = &.{.{ .name = "content-type", .value = "application/octet-stream" }},
        }),
        .not_found => try request.respond(not_found_body, .{ .status = .not_found }),
    }
}

fn setNoDelay(stream: Io.net.Stream) !void {
    const on: c_int = 1;
    try std.posix.setsockopt(stream.socket.handle, std.posix.IPPROTO.TCP, std.posix.TCP.NODELAY, std.mem.asBytes(&on));
}

// -- the process ------------------------------------------------------------------------------

const Options = struct {
    port: u16 = 0,
    workers: u64 = 1,
    meta: ?[]const u8 = null,
    help: bool = false,
};

const usage =
    \\usage: http_server [--port P] [--workers W] [--meta PATH]
    \\  serves GET /plaintext and GET /bytes/16384 on 127.0.0.1:P (0 = a free port) until stdin
    \\  reaches end of file; prints `listening <port>` once bound and `requests <N>` at exit.
    \\
;

/// The one-line message of a bad command line.
const Diagnostic = struct {
    buffer: [256]u8 = undefined,
    len: usize = 0,

    fn fail(self: *Diagnostic, comptime format: []const u8, args: anytype) error{Usage} {
        const text: []const u8 = std.fmt.bufPrint(&self.buffer, format, args) catch &self.buffer;
        self.len = text.len;
        return error.Usage;
    }

    fn message(self: *const Diagnostic) []const u8 {
        return self.buffer[0..self.len];
    }
};

fn parseArgs(args: []const []const u8, diag: *Diagnostic) error{Usage}!Options {
    var options = Options{};
    var index: usize = 0;
    while (index < args.len) : (index += 1) {
        const arg = args[index];
        if (std.mem.eql(u8, arg, "--help")) {
            options.help = true;
            continue;
        }
        const known = std.mem.eql(u8, arg, "--port") or std.mem.eql(u8, arg, "--workers") or std.mem.eql(u8, arg, "--meta");
        if (!known) return diag.fail("unknown argument '{s}'", .{arg});
        if (index + 1 >= args.len) return diag.fail("{s} needs a value", .{arg});
        index += 1;
        const value = args[index];
        if (std.mem.eql(u8, arg, "--meta")) {
            options.meta = value;
        } else if (std.mem.eql(u8, arg, "--port")) {
            options.port = std.fmt.parseInt(u16, value, 10) catch return diag.fail("--port {s}: expected 0-65535", .{value});
        } else {
            options.workers = std.fmt.parseInt(u64, value, 10) catch 0;
            if (options.workers < 1 or options.workers > 255) return diag.fail("--workers {s}: expected 1-255", .{value});
        }
    }
    return options;
}

/// The metadata JSON (`--meta`): the io program's (`impl.Meta`) with the server's name.
fn writeMeta(io: Io, gpa: std.mem.Allocator, path: []const u8) !void {
    var arena = std.heap.ArenaAllocator.init(gpa);
    defer arena.deinit();
    try output.writeAtomic(io, path, try impl.Meta.render(io, arena.allocator(), "glibc malloc", "std.http.Server"));
}

/// What the driver task reports back to `main`.
const Outcome = struct {
    requests: u64 = 0,
    failure: ?anyerror = null,
    failure_step: []const u8 = "",
};

/// Listens, says so on `stdout`, serves until stdin ends, stops.
fn drive(io: Io, port: u16, stdout: *Io.Writer, outcome: *Outcome) void {
    var server = Server.listen(io, port) catch |err| {
        outcome.* = .{ .failure = err, .failure_step = "listen" };
        return;
    };
    var accept_task = io.concurrent(Server.acceptLoop, .{&server}) catch |err| {
        server.listener.deinit(io);
        outcome.* = .{ .failure = err, .failure_step = "io.concurrent(accept)" };
        return;
    };
    stdout.print("listening {d}\n", .{server.port()}) catch {};
    stdout.flush() catch {};
    // Serve until stdin ends (the orchestrator closes it); read through the implementation.
    var stdin_buffer: [64]u8 = undefined;
    var stdin = Io.File.stdin().readerStreaming(io, &stdin_buffer);
    _ = stdin.interface.discardRemaining() catch {};
    outcome.requests = server.stop(&accept_task);
    if (server.accept_error) |err| {
        outcome.failure = err;
        outcome.failure_step = "accept";
    }
}

pub fn main(init: std.process.Init.Minimal) u8 {
    const gpa = SystemAllocator.allocator;
    var args_arena = std.heap.ArenaAllocator.init(gpa);
    defer args_arena.deinit();
    const args = init.args.toSlice(args_arena.allocator()) catch {
        std.debug.print("error: out of memory\n", .{});
        return 1;
    };
    var diag = Diagnostic{};
    const options = parseArgs(@ptrCast(args[1..]), &diag) catch {
        std.debug.print("error: {s}\n{s}", .{ diag.message(), usage });
        return 2;
    };
    // stdout and files through std's single-threaded `Io`; the implementation serves.
    var threaded: std.Io.Threaded = .init_single_threaded;
    const sys_io = threaded.io();
    var stdout_buffer: [256]u8 = undefined;
    var stdout = Io.File.stdout().writerStreaming(sys_io, &stdout_buffer);
    if (options.help) {
        stdout.interface.writeAll(usage) catch {};
        stdout.interface.flush() catch {};
        return 0;
    }
    if (options.meta) |path| {
        writeMeta(sys_io, gpa, path) catch |err| {
            std.debug.print("error: {s}: {s}\n", .{ path, @errorName(err) });
            return 1;
        };
    }
    var instance: impl.Instance = undefined;
    instance.init(gpa, options.workers) catch |err| {
        std.debug.print("error: {s} with {d} workers: {s}\n", .{ impl.name, options.workers, @errorName(err) });
        return 1;
    };
    const io = instance.io();
    var outcome = Outcome{};
    var driver = io.concurrent(drive, .{ io, options.port, &stdout.interface, &outcome }) catch |err| {
        std.debug.print("error: io.concurrent(driver): {s}\n", .{@errorName(err)});
        return 1;
    };
    driver.await(io);
    // ampere.io: the runtime's event counts over the server's life, one stderr line (kept in
    // the orchestrator's server log) for diagnosis; the other implementations have none.
    if (comptime @hasDecl(impl.Instance, "writeMetrics")) {
        var metrics_buffer: [16 * 1024]u8 = undefined;
        var metrics_text = Io.Writer.fixed(&metrics_buffer);
        if (instance.writeMetrics(&metrics_text)) |_| {
            std.debug.print("metrics {s}\n", .{metrics_text.buffered()});
        } else |_| {}
    }
    instance.deinit();
    if (outcome.failure) |err| {
        std.debug.print("error: {s}: {s}\n", .{ outcome.failure_step, @errorName(err) });
        return 1;
    }
    stdout.interface.print("requests {d}\n", .{outcome.requests}) catch {};
    stdout.interface.flush() catch {};
    return 0;
}

// -- tests (zig build test-io: on this build's implementation) --------------------------------

const testing = std.testing;

test "routes: GET /plaintext, GET /bytes/16384, everything else 404" {
    try testing.expectEqual(Route.plaintext, Route.of(.GET, "/plaintext"));
    try testing.expectEqual(Route.bytes, Route.of(.GET, "/bytes/16384"));
    try testing.expectEqual(Route.not_found, Route.of(.POST, "/plaintext"));
    try testing.expectEqual(Route.not_found, Route.of(.GET, "/plaintext/"));
    try testing.expectEqual(Route.not_found, Route.of(.GET, "/bytes/16"));
    try testing.expectEqual(Route.not_found, Route.of(.GET, "/"));
    try testing.expectEqual(@as(u8, 'a'), bytes_body[0]);
    try testing.expectEqual(@as(u8, 'z'), bytes_body[25]);
    try testing.expectEqual(@as(u8, 'a'), bytes_body[26]);
}

test "command line" {
    var diag = Diagnostic{};
    const options = try parseArgs(&.{ "--port", "8080", "--workers", "3" }, &diag);
    try testing.expectEqual(@as(u16, 8080), options.port);
    try testing.expectEqual(@as(u64, 3), options.workers);
    try testing.expectError(error.Usage, parseArgs(&.{ "--workers", "0" }, &diag));
    try testing.expectError(error.Usage, parseArgs(&.{"--port"}, &diag));
    try testing.expectError(error.Usage, parseArgs(&.{"--bogus"}, &diag));
    try testing.expectEqualStrings("unknown argument '--bogus'", diag.message());
}

fn fetchAll(io: Io, port: u16, gpa: std.mem.Allocator) !void {
    var client: std.http.Client = .{ .allocator = gpa, .io = io };
    defer client.deinit();
    const cases = [_]struct { path: []const u8, status: std.http.Status, body: []const u8 }{
        .{ .path = "/plaintext", .status = .ok, .body = plaintext_body },
        .{ .path = "/bytes/16384", .status = .ok, .body = &bytes_body },
        .{ .path = "/nope", .status = .not_found, .body = not_found_body },
        .{ .path = "/plaintext", .status = .ok, .body = plaintext_body },
    };
    for (cases) |case| {
        var url_buffer: [64]u8 = undefined;
        const url = try std.fmt.bufPrint(&url_buffer, "http://127.0.0.1:{d}{s}", .{ port, case.path });
        var body: Io.Writer.Allocating = .init(gpa);
        defer body.deinit();
        const result = try client.fetch(.{ .location = .{ .url = url }, .response_writer = &body.writer });
        try testing.expectEqual(case.status, result.status);
        try testing.expectEqualSlices(u8, case.body, body.written());
    }
}

test "the server answers std.http.Client on this implementation and counts its responses" {
    var instance: impl.Instance = undefined;
    try instance.init(testing.allocator, 2);
    defer instance.deinit();
    const io = instance.io();
    const Test = struct {
        fn run(test_io: Io) !void {
            var server = try Server.listen(test_io, 0);
            var accept_task = try test_io.concurrent(Server.acceptLoop, .{&server});
            try fetchAll(test_io, server.port(), testing.allocator);
            try testing.expectEqual(@as(u64, 4), server.stop(&accept_task));
            try testing.expectEqual(@as(?anyerror, null), server.accept_error);
        }
    };
    var task = try io.concurrent(Test.run, .{io});
    try task.await(io);
}
