//! A small HTTP server on `std.http.Server`, run on Ampere's fibers.
//!
//!     zig build examples && ./zig-out/bin/http_server 8080
//!     (then: curl http://127.0.0.1:8080/hello)
//!
//! One fiber per connection (keep-alive: several requests per connection); the handler is
//! ordinary blocking-style code. `/sleep` waits 100 ms on the runtime's timer wheel before it
//! answers — other connections are served meanwhile. The test fetches pages with
//! `std.http.Client` on the same runtime.

const std = @import("std");
const ampere = @import("ampere");
const Io = std.Io;
const net = Io.net;

pub fn serve(io: Io, server: *net.Server) !void {
    var connections: Io.Group = .init;
    defer connections.cancel(io);
    while (true) {
        const stream = try server.accept(io);
        connections.concurrent(io, handleConnection, .{ io, stream }) catch |err| {
            stream.close(io);
            return err;
        };
    }
}

fn handleConnection(io: Io, stream: net.Stream) Io.Cancelable!void {
    defer stream.close(io);
    var read_buffer: [8192]u8 = undefined;
    var write_buffer: [8192]u8 = undefined;
    var reader = stream.reader(io, &read_buffer);
    var writer = stream.writer(io, &write_buffer);
    var http = std.http.Server.init(&reader.interface, &writer.interface);
    while (true) {
        var request = http.receiveHead() catch return; // Closed, or a malformed request.
        respond(io, &request) catch |err| switch (err) {
            error.Canceled => return error.Canceled,
            else => return,
        };
    }
}

fn respond(io: Io, request: *std.http.Server.Request) !void {
    const target = request.head.target;
    if (std.mem.eql(u8, target, "/hello")) {
        return request.respond("hello from a fiber\n", .{});
    }
    if (std.mem.eql(u8, target, "/sleep")) {
        try io.sleep(.fromMilliseconds(100), .awake);
        return request.respond("slept 100 ms\n", .{});
    }
    if (std.mem.eql(u8, target, "/random")) {
        var bytes: [8]u8 = undefined;
        io.random(&bytes);
        var body: [32]u8 = undefined;
        return request.respond(try std.fmt.bufPrint(&body, "{x}\n", .{bytes}), .{});
    }
    return request.respond("not found\n", .{ .status = .not_found });
}

pub fn main(init: std.process.Init) !void {
    var args = init.minimal.args.iterate();
    _ = args.skip();
    const port = if (args.next()) |text| try std.fmt.parseInt(u16, text, 10) else 8080;

    const rt = try ampere.Runtime.init(init.gpa, .{ .environ = init.minimal.environ });
    defer rt.deinit();
    const io = rt.io();

    var address: net.IpAddress = .{ .ip4 = .loopback(port) };
    var server = try address.listen(io, .{ .reuse_address = true });
    defer server.deinit(io);
    std.debug.print("http server on http://127.0.0.1:{d}/hello\n", .{server.socket.address.getPort()});
    var serving = try io.concurrent(serve, .{ io, &server });
    try serving.await(io);
}

// -- test -----------------------------------------------------------------------------------

fn fetch(io: Io, client: *std.http.Client, port: u16, path: []const u8, body: *Io.Writer.Allocating) !std.http.Status {
    var url_buffer: [64]u8 = undefined;
    const url = try std.fmt.bufPrint(&url_buffer, "http://127.0.0.1:{d}{s}", .{ port, path });
    _ = io;
    const result = try client.fetch(.{ .location = .{ .url = url }, .response_writer = &body.writer });
    return result.status;
}

fn slowFetch(io: Io, port: u16, done_at: *Io.Timestamp) !void {
    var client: std.http.Client = .{ .allocator = std.testing.allocator, .io = io };
    defer client.deinit();
    var body: Io.Writer.Allocating = .init(std.testing.allocator);
    defer body.deinit();
    try std.testing.expectEqual(std.http.Status.ok, try fetch(io, &client, port, "/sleep", &body));
    done_at.* = Io.Clock.awake.now(io);
}

test "the http server answers std.http.Client, and a slow request does not hold up others" {
    const rt = try ampere.Runtime.init(std.testing.allocator, .{ .workers = 2 });
    defer rt.deinit();
    const io = rt.io();
    var address: net.IpAddress = .{ .ip4 = .loopback(0) };
    var server = try address.listen(io, .{});
    defer server.deinit(io);
    const port = server.socket.address.getPort();
    var serving = try io.concurrent(serve, .{ io, &server });

    var slow_done: Io.Timestamp = .zero;
    var slow = try io.concurrent(slowFetch, .{ io, port, &slow_done });

    var client: std.http.Client = .{ .allocator = std.testing.allocator, .io = io };
    defer client.deinit();
    var body: Io.Writer.Allocating = .init(std.testing.allocator);
    defer body.deinit();
    try std.testing.expectEqual(std.http.Status.ok, try fetch(io, &client, port, "/hello", &body));
    const hello_done = Io.Clock.awake.now(io);
    try std.testing.expectEqualStrings("hello from a fiber\n", body.written());
    body.clearRetainingCapacity();
    try std.testing.expectEqual(std.http.Status.not_found, try fetch(io, &client, port, "/nope", &body));

    try slow.await(io);
    // /hello was answered while /sleep was still sleeping.
    try std.testing.expect(hello_done.nanoseconds < slow_done.nanoseconds);
    try std.testing.expectError(error.Canceled, serving.cancel(io));
}
