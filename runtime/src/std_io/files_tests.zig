//! Files, pipes, processes, batches and host-name lookup through `ampere.Io`: the blocking
//! calls run on the blocking pool while the fiber waits — a pipe read waiting for a writer on
//! the same one-worker runtime proves the worker is not blocked.

const std = @import("std");
const testing = std.testing;
const Io = std.Io;
const linux = std.os.linux;

const Runtime = @import("../Runtime.zig");
const os = @import("../os.zig");
const net_tests = @import("net_tests.zig");

fn newRuntime(workers: u32) !*Runtime {
    return Runtime.init(testing.allocator, .{ .workers = workers, .blocking_keep_alive_ns = 50 * std.time.ns_per_ms });
}

fn pipe() ![2]Io.File {
    var fds: [2]i32 = undefined;
    if (linux.errno(linux.pipe2(&fds, .{ .CLOEXEC = true })) != .SUCCESS) return error.PipeFailed;
    return .{ .{ .handle = fds[0], .flags = .{ .nonblocking = false } }, .{ .handle = fds[1], .flags = .{ .nonblocking = false } } };
}

const PipePair = struct {
    fn read(io: Io, file: Io.File) !usize {
        var buffer: [16]u8 = undefined;
        var reader = file.readerStreaming(io, &buffer);
        var destination: [5]u8 = undefined;
        try reader.interface.readSliceAll(&destination);
        if (!std.mem.eql(u8, &destination, "hello")) return error.WrongBytes;
        return destination.len;
    }

    fn write(io: Io, file: Io.File) !void {
        try io.sleep(.fromMilliseconds(5), .awake);
        try file.writeStreamingAll(io, "hello");
    }
};

test "a pipe read waits on the blocking pool: the writer runs on the same, only worker" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    const ends = try pipe();
    defer for (ends) |end| end.close(io);
    var reading = try io.concurrent(PipePair.read, .{ io, ends[0] });
    var writing = try io.concurrent(PipePair.write, .{ io, ends[1] });
    try writing.await(io);
    try testing.expectEqual(@as(usize, 5), try reading.await(io));
}

test "std.process.run through ampere.Io: pipes read concurrently (a batch), exit status" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    const Run = struct {
        fn run(inner: Io) !std.process.RunResult {
            return std.process.run(testing.allocator, inner, .{
                .argv = &.{ "/bin/sh", "-c", "echo out; echo err >&2; exit 3" },
            });
        }
    };
    var f = try io.concurrent(Run.run, .{io});
    const result = try f.await(io);
    defer testing.allocator.free(result.stdout);
    defer testing.allocator.free(result.stderr);
    try testing.expectEqualStrings("out\n", result.stdout);
    try testing.expectEqualStrings("err\n", result.stderr);
    try testing.expectEqual(std.process.Child.Term{ .exited = 3 }, result.term);
}

test "a batch with a pipe read times out, is canceled, and the read that was running completes" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    const ends = try pipe();
    defer for (ends) |end| end.close(io);
    const Waiter = struct {
        fn run(inner: Io, file: Io.File, writer_end: Io.File) !usize {
            var buffer: [8]u8 = undefined;
            var vector = [_][]u8{&buffer};
            var storage: [1]Io.Operation.Storage = undefined;
            var batch = Io.Batch.init(&storage);
            _ = batch.add(.{ .file_read_streaming = .{ .file = file, .data = &vector } });
            try testing.expectError(error.Timeout, batch.awaitConcurrent(inner, .{ .duration = .{ .raw = .fromMilliseconds(20), .clock = .awake } }));
            try testing.expect(batch.next() == null);
            // The read runs on the pool: give it data, then cancel — it completes instead.
            try writer_end.writeStreamingAll(inner, "abc");
            batch.cancel(inner);
            const completion = batch.next() orelse return error.NoCompletion;
            return try completion.result.file_read_streaming;
        }
    };
    var f = try io.concurrent(Waiter.run, .{ io, ends[0], ends[1] });
    try testing.expectEqual(@as(usize, 3), try f.await(io));
}

test "receiveTimeout on a UDP socket: a timeout leaves nothing behind, then a datagram arrives" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var any: Io.net.IpAddress = .{ .ip4 = .loopback(0) };
    const a = try any.bind(io, .{ .mode = .dgram });
    defer a.close(io);
    const b = try any.bind(io, .{ .mode = .dgram });
    defer b.close(io);
    const Receiver = struct {
        fn run(inner: Io, socket: Io.net.Socket) !u8 {
            var buffer: [8]u8 = undefined;
            const timeout: Io.Timeout = .{ .duration = .{ .raw = .fromMilliseconds(10), .clock = .awake } };
            try testing.expectError(error.Timeout, socket.receiveTimeout(inner, &buffer, timeout));
            try testing.expectError(error.Timeout, socket.receiveTimeout(inner, &buffer, timeout));
            const message = try socket.receiveTimeout(inner, &buffer, .{ .duration = .{ .raw = .fromSeconds(10), .clock = .awake } });
            return message.data[0];
        }
    };
    var f = try io.concurrent(Receiver.run, .{ io, b });
    try io.sleep(.fromMilliseconds(40), .awake);
    try a.send(io, &b.address, "z");
    try testing.expectEqual(@as(u8, 'z'), try f.await(io));
}

test "files and directories from a fiber: create, write, read back, stat, list, rename, delete" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    const Files = struct {
        fn run(inner: Io) !void {
            var name_buffer: [64]u8 = undefined;
            const dir_name = try std.fmt.bufPrint(&name_buffer, "/tmp/ampere-files-{d}", .{linux.getpid()});
            const cwd = Io.Dir.cwd();
            cwd.deleteTree(inner, dir_name) catch {};
            try cwd.createDir(inner, dir_name, .default_dir);
            defer cwd.deleteTree(inner, dir_name) catch {};
            var dir = try cwd.openDir(inner, dir_name, .{ .iterate = true });
            defer dir.close(inner);

            const file = try dir.createFile(inner, "a.txt", .{ .read = true });
            var write_buffer: [64]u8 = undefined;
            var writer = file.writer(inner, &write_buffer);
            try writer.interface.print("line {d}\n", .{42});
            try writer.interface.flush();
            var contents: [16]u8 = undefined;
            const n = try file.readPositionalAll(inner, &contents, 0);
            try testing.expectEqualStrings("line 42\n", contents[0..n]);
            try testing.expectEqual(@as(u64, 8), (try file.stat(inner)).size);
            file.close(inner);

            try dir.rename("a.txt", dir, "b.txt", inner);
            var it = dir.iterate();
            const entry = (try it.next(inner)) orelse return error.Empty;
            try testing.expectEqualStrings("b.txt", entry.name);
            try testing.expect((try it.next(inner)) == null);
            try dir.deleteFile(inner, "b.txt");
        }
    };
    var f = try io.concurrent(Files.run, .{io});
    try f.await(io);
}

test "host names: numeric and localhost lookups, and HostName.connect to a local listener" {
    const before = try net_tests.openFdCount();
    {
        const rt = try newRuntime(2);
        defer rt.deinit();
        const io = rt.io();
        const Lookup = struct {
            fn run(inner: Io) !u16 {
                var address: Io.net.IpAddress = .{ .ip4 = .loopback(0) };
                var server = try address.listen(inner, .{});
                defer server.deinit(inner);
                const port = server.socket.address.getPort();
                const host = try Io.net.HostName.init("localhost");
                var accepting = try inner.concurrent(acceptOne, .{ inner, &server });
                const stream = try host.connect(inner, port, .{ .mode = .stream });
                stream.close(inner);
                try accepting.await(inner);

                var buffer: [16]Io.net.HostName.LookupResult = undefined;
                var queue = Io.Queue(Io.net.HostName.LookupResult).init(&buffer);
                try (try Io.net.HostName.init("127.0.0.1")).lookup(inner, &queue, .{ .port = 80 });
                const first = try queue.getOne(inner);
                return first.address.getPort();
            }

            fn acceptOne(inner: Io, server: *Io.net.Server) !void {
                const stream = try server.accept(inner);
                stream.close(inner);
            }
        };
        var f = try io.concurrent(Lookup.run, .{io});
        try testing.expectEqual(@as(u16, 80), try f.await(io));
    }
    try testing.expectEqual(before, try net_tests.openFdCount());
}

test "lockStderr is re-entrant per fiber and excludes other fibers" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    const Locker = struct {
        fn run(inner: Io, inside: *std.atomic.Value(u32), overlaps: *std.atomic.Value(u32)) !void {
            for (0..20) |_| {
                _ = try inner.lockStderr(&.{}, .no_color);
                _ = try inner.lockStderr(&.{}, .no_color); // Re-entrant.
                if (inside.fetchAdd(1, .monotonic) != 0) _ = overlaps.fetchAdd(1, .monotonic);
                try inner.sleep(.fromMilliseconds(1), .awake); // Suspend while holding it.
                _ = inside.fetchSub(1, .monotonic);
                inner.unlockStderr();
                inner.unlockStderr();
            }
        }
    };
    var inside = std.atomic.Value(u32).init(0);
    var overlaps = std.atomic.Value(u32).init(0);
    var a = try io.concurrent(Locker.run, .{ io, &inside, &overlaps });
    var b = try io.concurrent(Locker.run, .{ io, &inside, &overlaps });
    try a.await(io);
    try b.await(io);
    try testing.expectEqual(@as(u32, 0), overlaps.load(.monotonic));
}
