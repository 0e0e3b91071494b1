//! A TCP echo server written against std.Io alone, run on Ampere's fibers.
//!
//!     zig build examples && ./zig-out/bin/echo_server 7000
//!     (then: nc 127.0.0.1 7000)
//!
//! Every connection is a fiber in one `std.Io.Group`: straight-line code that reads a chunk and
//! writes it back until the client closes. A read or write that would block suspends the
//! fiber; the worker thread runs other connections meanwhile (the runtime's epoll driver wakes
//! the fiber when its socket is ready). The test at the bottom runs the server and 50 clients
//! in one process.

const std = @import("std");
const ampere = @import("ampere");
const Io = std.Io;
const net = Io.net;

/// Accepts connections until canceled (or the listener fails); each gets its own fiber.
pub fn serve(io: Io, server: *net.Server) !void {
    var connections: Io.Group = .init;
    defer connections.cancel(io);
    while (true) {
        const stream = try server.accept(io);
        connections.concurrent(io, echo, .{ io, stream }) catch |err| {
            stream.close(io);
            return err;
        };
    }
}

fn echo(io: Io, stream: net.Stream) Io.Cancelable!void {
    defer stream.close(io);
    var read_buffer: [4096]u8 = undefined;
    var reader = stream.reader(io, &read_buffer);
    var writer = stream.writer(io, &.{});
    while (true) {
        // Whatever arrived, at least one byte (end of stream: the client closed).
        const chunk = reader.interface.peekGreedy(1) catch |err| switch (err) {
            error.EndOfStream => return,
            error.ReadFailed => return if (reader.err.? == error.Canceled) error.Canceled,
        };
        writer.interface.writeAll(chunk) catch return if (writer.err.? == error.Canceled) error.Canceled;
        reader.interface.toss(chunk.len);
    }
}

pub fn main(init: std.process.Init) !void {
    var args = init.minimal.args.iterate();
    _ = args.skip();
    const port = if (args.next()) |text| try std.fmt.parseInt(u16, text, 10) else 7000;

    const rt = try ampere.Runtime.init(init.gpa, .{ .environ = init.minimal.environ });
    defer rt.deinit();
    const io = rt.io();

    var address: net.IpAddress = .{ .ip4 = .loopback(port) };
    var server = try address.listen(io, .{ .reuse_address = true });
    defer server.deinit(io);
    std.debug.print("echo server on 127.0.0.1:{d}\n", .{server.socket.address.getPort()});
    var serving = try io.concurrent(serve, .{ io, &server });
    try serving.await(io);
}

// -- test: the server and 50 clients in one process ----------------------------------------

fn client(io: Io, address: net.IpAddress, id: usize) !void {
    const stream = try address.connect(io, .{ .mode = .stream });
    defer stream.close(io);
    var read_buffer: [64]u8 = undefined;
    var reader = stream.reader(io, &read_buffer);
    var writer = stream.writer(io, &.{});
    for (0..20) |round| {
        var line_buffer: [64]u8 = undefined;
        const line = try std.fmt.bufPrint(&line_buffer, "client {d} says {d}\n", .{ id, round });
        try writer.interface.writeAll(line);
        const echoed = try reader.interface.takeDelimiterInclusive('\n');
        try std.testing.expectEqualStrings(line, echoed);
    }
}

test "the echo server answers 50 concurrent clients" {
    const rt = try ampere.Runtime.init(std.testing.allocator, .{ .workers = 2 });
    defer rt.deinit();
    const io = rt.io();
    var address: net.IpAddress = .{ .ip4 = .loopback(0) };
    var server = try address.listen(io, .{});
    defer server.deinit(io);
    var serving = try io.concurrent(serve, .{ io, &server });

    var clients: Io.Group = .init;
    for (0..50) |id| try clients.concurrent(io, clientOk, .{ io, server.socket.address, id });
    try clients.await(io);
    try std.testing.expectError(error.Canceled, serving.cancel(io));
}

fn clientOk(io: Io, address: net.IpAddress, id: usize) void {
    client(io, address, id) catch |err| std.debug.panic("client {d}: {t}", .{ id, err });
}
