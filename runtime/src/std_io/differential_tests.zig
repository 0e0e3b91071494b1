//! Differential tests: programs written against `std.Io` alone, run on `std.Io.Threaded` and
//! on `ampere.Io` (inside a fiber), whose observable results — a transcript each program
//! writes — must be identical. After each run: no descriptor left open (both
//! implementations), no fiber stack out of the pool (ampere).
//!
//! The programs avoid timing-dependent output: what they record is fixed by their structure
//! (totals, the winner of a race between "now" and "never", errors of waits that cannot
//! succeed), so both implementations must agree exactly. They use `concurrent` where a task
//! must run alongside its spawner: std.Io.Threaded runs `async` inline once its pool is busy
//! (one thread on a two-CPU machine).

const std = @import("std");
const testing = std.testing;
const Io = std.Io;
const net = Io.net;

const Runtime = @import("../Runtime.zig");
const net_tests = @import("net_tests.zig");

/// What a program observed, in order. Appended under a std.Io mutex of the Io under test.
const Transcript = struct {
    mutex: Io.Mutex = .init,
    bytes: std.ArrayList(u8) = .empty,

    fn record(self: *Transcript, io: Io, comptime format: []const u8, args: anytype) void {
        self.mutex.lockUncancelable(io);
        defer self.mutex.unlock(io);
        self.bytes.print(testing.allocator, format ++ "\n", args) catch @panic("transcript: out of memory");
    }

    fn deinit(self: *Transcript) void {
        self.bytes.deinit(testing.allocator);
    }
};

const Program = fn (io: Io, transcript: *Transcript) anyerror!void;

fn runOnThreaded(comptime program: Program, transcript: *Transcript) !void {
    var threaded = Io.Threaded.init(testing.allocator, .{});
    defer threaded.deinit();
    try program(threaded.io(), transcript);
}

fn runOnAmpere(comptime program: Program, transcript: *Transcript) !void {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2, .blocking_keep_alive_ns = 20 * std.time.ns_per_ms });
    defer rt.deinit();
    const io = rt.io();
    var main = try io.concurrent(program, .{ io, transcript });
    try main.await(io);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

/// Runs `program` on both implementations and compares what they recorded.
fn differential(comptime program: Program) !void {
    const fds_before = try net_tests.openFdCount();
    var threaded_transcript = Transcript{};
    defer threaded_transcript.deinit();
    try runOnThreaded(program, &threaded_transcript);
    try testing.expectEqual(fds_before, try net_tests.openFdCount());

    var ampere_transcript = Transcript{};
    defer ampere_transcript.deinit();
    try runOnAmpere(program, &ampere_transcript);
    try testing.expectEqual(fds_before, try net_tests.openFdCount());

    try testing.expect(threaded_transcript.bytes.items.len > 0);
    try testing.expectEqualStrings(threaded_transcript.bytes.items, ampere_transcript.bytes.items);
}

// -- Queue: producers and consumers ----------------------------------------------------------

const QueueProgram = struct {
    const producers = 4;
    const consumers = 3;
    const per_producer = 2_000;

    fn produce(io: Io, queue: *Io.Queue(u64), first: u64) Io.Cancelable!void {
        for (first..first + per_producer) |i| queue.putOne(io, i) catch |err| switch (err) {
            error.Closed => unreachable,
            error.Canceled => |e| return e,
        };
    }

    fn consume(io: Io, queue: *Io.Queue(u64), sum: *std.atomic.Value(u64), count: *std.atomic.Value(u64)) Io.Cancelable!void {
        var batch: [7]u64 = undefined;
        while (true) {
            const n = queue.get(io, &batch, 1) catch |err| switch (err) {
                error.Closed => return,
                error.Canceled => |e| return e,
            };
            for (batch[0..n]) |value| _ = sum.fetchAdd(value, .monotonic);
            _ = count.fetchAdd(n, .monotonic);
        }
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var buffer: [16]u64 = undefined;
        var queue = Io.Queue(u64).init(&buffer);
        var sum = std.atomic.Value(u64).init(0);
        var count = std.atomic.Value(u64).init(0);
        var consuming: Io.Group = .init;
        for (0..consumers) |_| try consuming.concurrent(io, consume, .{ io, &queue, &sum, &count });
        var producing: Io.Group = .init;
        for (0..producers) |p| try producing.concurrent(io, produce, .{ io, &queue, p * per_producer });
        try producing.await(io);
        queue.close(io);
        try consuming.await(io);
        transcript.record(io, "received {d} values, sum {d}", .{ count.load(.monotonic), sum.load(.monotonic) });
        // A closed queue still delivers what it holds, then reports Closed.
        var small: [2]u8 = undefined;
        var closing = Io.Queue(u8).init(&small);
        try closing.putOne(io, 7);
        closing.close(io);
        transcript.record(io, "after close: {d}, then {t}", .{ try closing.getOne(io), if (closing.getOne(io)) |_| error.Unexpected else |err| err });
    }
};

test "differential: Io.Queue with four producers and three consumers" {
    try differential(QueueProgram.run);
}

// -- Group with cancellation -----------------------------------------------------------------

const GroupProgram = struct {
    fn quick(io: Io, done: *std.atomic.Value(u32)) void {
        _ = io;
        _ = done.fetchAdd(1, .monotonic);
    }

    fn blocked(io: Io, event: *Io.Event, canceled: *std.atomic.Value(u32)) Io.Cancelable!void {
        event.wait(io) catch |err| {
            _ = canceled.fetchAdd(1, .monotonic);
            return err;
        };
    }

    fn awaitGroup(io: Io, event: *Io.Event, canceled: *std.atomic.Value(u32)) Io.Cancelable!void {
        var group: Io.Group = .init;
        for (0..3) |_| group.concurrent(io, blocked, .{ io, event, canceled }) catch unreachable;
        return group.await(io);
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var never: Io.Event = .unset;
        var done = std.atomic.Value(u32).init(0);
        var canceled = std.atomic.Value(u32).init(0);
        var group: Io.Group = .init;
        for (0..5) |_| try group.concurrent(io, quick, .{ io, &done });
        for (0..5) |_| try group.concurrent(io, blocked, .{ io, &never, &canceled });
        // The quick members finish on their own; wait for them before canceling the rest.
        while (done.load(.monotonic) < 5) try io.sleep(.fromMilliseconds(1), .awake);
        group.cancel(io);
        transcript.record(io, "group.cancel: {d} finished, {d} canceled", .{ done.load(.monotonic), canceled.load(.monotonic) });
        try group.await(io); // Idempotent after cancel: returns at once.

        canceled.store(0, .monotonic);
        var awaiting = try io.concurrent(awaitGroup, .{ io, &never, &canceled });
        try io.sleep(.fromMilliseconds(10), .awake);
        const result = awaiting.cancel(io);
        transcript.record(io, "awaiter canceled: {any}, members canceled {d}", .{ result, canceled.load(.monotonic) });

        // An empty group awaits at once; a group can be reused after await.
        var empty: Io.Group = .init;
        try empty.await(io);
        done.store(0, .monotonic);
        for (0..3) |_| try group.concurrent(io, quick, .{ io, &done });
        try group.await(io);
        transcript.record(io, "reused group: {d} finished", .{done.load(.monotonic)});
    }
};

test "differential: Group await and cancel, a canceled awaiter, reuse" {
    try differential(GroupProgram.run);
}

// -- select ----------------------------------------------------------------------------------

const SelectProgram = struct {
    fn never(io: Io, event: *Io.Event) Io.Cancelable![]const u8 {
        try event.wait(io);
        return "never";
    }

    fn soon(io: Io, milliseconds: i64) Io.Cancelable![]const u8 {
        try io.sleep(.fromMilliseconds(milliseconds), .awake);
        return "soon";
    }

    fn value(x: u32) u32 {
        return x * 3;
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var event: Io.Event = .unset;
        const U = union(enum) { never: Io.Cancelable![]const u8, soon: Io.Cancelable![]const u8, value: u32 };
        var buffer: [4]U = undefined;
        var select = Io.Select(U).init(io, &buffer);
        try select.concurrent(.never, never, .{ io, &event });
        try select.concurrent(.soon, soon, .{ io, 5 });
        const first = try select.await();
        transcript.record(io, "first: {t} {s}", .{ first, switch (first) {
            .soon => |r| try r,
            else => "?",
        } });
        while (select.cancel()) |loser| transcript.record(io, "canceled loser: {t} -> {any}", .{ loser, switch (loser) {
            .never => |r| r,
            else => error.Unexpected,
        } });

        var again = Io.Select(U).init(io, &buffer);
        again.async(.value, value, .{14});
        const got = try again.await();
        transcript.record(io, "async in select: {d}", .{got.value});
        again.cancelDiscard();
    }
};

test "differential: Select returns the first result and cancels the rest" {
    try differential(SelectProgram.run);
}

// -- sleeps and timeouts ---------------------------------------------------------------------

const TimeProgram = struct {
    fn sleeper(io: Io, queue: *Io.Queue(u8), id: u8, milliseconds: i64) Io.Cancelable!void {
        try io.sleep(.fromMilliseconds(milliseconds), .awake);
        queue.putOne(io, id) catch |err| switch (err) {
            error.Canceled => |e| return e,
            error.Closed => unreachable,
        };
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        const start = Io.Clock.awake.now(io);
        var event: Io.Event = .unset;
        const waited = event.waitTimeout(io, .{ .duration = .{ .raw = .fromMilliseconds(30), .clock = .awake } });
        const elapsed_ms = start.durationTo(Io.Clock.awake.now(io)).toMilliseconds();
        transcript.record(io, "waitTimeout on an unset event: {any}, waited >= 30 ms: {}", .{ waited, elapsed_ms >= 30 });

        var word: u32 = 1;
        try io.futexWaitTimeout(u32, &word, 0, .{ .duration = .{ .raw = .fromSeconds(10), .clock = .awake } });
        transcript.record(io, "futexWait on a changed value returns at once: {}", .{start.durationTo(Io.Clock.awake.now(io)).toMilliseconds() < 5_000});

        var buffer: [3]u8 = undefined;
        var queue = Io.Queue(u8).init(&buffer);
        var group: Io.Group = .init;
        try group.concurrent(io, sleeper, .{ io, &queue, 'c', 120 });
        try group.concurrent(io, sleeper, .{ io, &queue, 'a', 5 });
        try group.concurrent(io, sleeper, .{ io, &queue, 'b', 60 });
        try group.await(io);
        var order: [3]u8 = undefined;
        _ = try queue.get(io, &order, 3);
        transcript.record(io, "sleepers finished in order {s}", .{&order});

        const deadline = Io.Clock.Timestamp.fromNow(io, .{ .raw = .fromMilliseconds(20), .clock = .real });
        try deadline.wait(io);
        transcript.record(io, "a deadline on the real clock passed: {}", .{Io.Clock.real.now(io).nanoseconds >= deadline.raw.nanoseconds});
        try io.sleep(.fromMilliseconds(-5), .awake); // A past duration returns at once.
        transcript.record(io, "done", .{});
    }
};

test "differential: sleeps, deadlines, waitTimeout and futex timeouts" {
    try differential(TimeProgram.run);
}

// -- mutual exclusion and conditions ---------------------------------------------------------

const SyncProgram = struct {
    const rounds = 500;

    const Shared = struct {
        mutex: Io.Mutex = .init,
        condition: Io.Condition = .init,
        turn: u32 = 0,
        rwlock: Io.RwLock = .init,
        semaphore: Io.Semaphore = .{ .permits = 0 },
        reads: u32 = 0,
    };

    fn player(io: Io, shared: *Shared, me: u32) Io.Cancelable!void {
        for (0..rounds) |_| {
            try shared.mutex.lock(io);
            defer shared.mutex.unlock(io);
            while (shared.turn % 2 != me) try shared.condition.wait(io, &shared.mutex);
            shared.turn += 1;
            shared.condition.broadcast(io);
        }
    }

    fn reader(io: Io, shared: *Shared) Io.Cancelable!void {
        try shared.semaphore.wait(io);
        try shared.rwlock.lockShared(io);
        defer shared.rwlock.unlockShared(io);
        _ = @atomicRmw(u32, &shared.reads, .Add, 1, .monotonic);
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var shared = Shared{};
        var a = try io.concurrent(player, .{ io, &shared, 0 });
        var b = try io.concurrent(player, .{ io, &shared, 1 });
        try a.await(io);
        try b.await(io);
        transcript.record(io, "turns {d}", .{shared.turn});

        try shared.rwlock.lock(io);
        var readers: Io.Group = .init;
        for (0..4) |_| try readers.concurrent(io, reader, .{ io, &shared });
        for (0..4) |_| shared.semaphore.post(io);
        try io.sleep(.fromMilliseconds(5), .awake);
        // Whether the readers got their permits yet is timing; that none got past the write
        // lock is not.
        transcript.record(io, "readers past the write lock: {d}", .{@atomicLoad(u32, &shared.reads, .monotonic)});
        shared.rwlock.unlock(io);
        try readers.await(io);
        transcript.record(io, "readers done: {d}", .{shared.reads});
    }
};

test "differential: Mutex, Condition, RwLock and Semaphore between tasks" {
    try differential(SyncProgram.run);
}

// -- cancellation rules ----------------------------------------------------------------------

const CancelProgram = struct {
    fn sleeper(io: Io) anyerror![]const u8 {
        io.sleep(.fromSeconds(3600), .awake) catch |err| switch (err) {
            error.Canceled => {
                // Delivered once: the next point proceeds; recancel re-arms it.
                try io.checkCancel();
                io.recancel();
                io.checkCancel() catch return "canceled, re-armed, canceled again";
                return "not re-armed";
            },
        };
        return "slept an hour";
    }

    fn protected(io: Io) anyerror![]const u8 {
        const old = io.swapCancelProtection(.blocked);
        defer _ = io.swapCancelProtection(old);
        try io.sleep(.fromMilliseconds(20), .awake);
        try io.checkCancel();
        return "protected sleep finished";
    }

    fn finished() u32 {
        return 5;
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var a = try io.concurrent(sleeper, .{io});
        try io.sleep(.fromMilliseconds(5), .awake);
        transcript.record(io, "{s}", .{try a.cancel(io)});
        var b = try io.concurrent(protected, .{io});
        try io.sleep(.fromMilliseconds(5), .awake);
        transcript.record(io, "{s}", .{try b.cancel(io)});
        var c = try io.concurrent(finished, .{});
        try io.sleep(.fromMilliseconds(5), .awake);
        transcript.record(io, "cancel after completion returns the result: {d}", .{c.cancel(io)});
        transcript.record(io, "on the awaiting task: protection {t}, checkCancel ok", .{io.swapCancelProtection(.unblocked)});
        try io.checkCancel();
    }
};

test "differential: cancellation points, recancel, cancel protection" {
    try differential(CancelProgram.run);
}

// -- files -----------------------------------------------------------------------------------

const FileProgram = struct {
    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var name_buffer: [64]u8 = undefined;
        const root = try std.fmt.bufPrint(&name_buffer, "/tmp/ampere-diff-{d}", .{std.os.linux.getpid()});
        const cwd = Io.Dir.cwd();
        cwd.deleteTree(io, root) catch {};
        try cwd.createDirPath(io, root);
        defer cwd.deleteTree(io, root) catch {};
        var dir = try cwd.openDir(io, root, .{ .iterate = true });
        defer dir.close(io);

        for ([_][]const u8{ "one", "two", "three" }, 1..) |name, i| {
            const file = try dir.createFile(io, name, .{});
            defer file.close(io);
            var buffer: [32]u8 = undefined;
            var writer = file.writer(io, &buffer);
            for (0..i) |_| try writer.interface.print("{s}\n", .{name});
            try writer.interface.flush();
        }
        try dir.createDir(io, "sub", .default_dir);
        try dir.rename("three", dir, "sub/three", io);

        var names: std.ArrayList([]const u8) = .empty;
        defer {
            for (names.items) |n| testing.allocator.free(n);
            names.deinit(testing.allocator);
        }
        var walker = try dir.walk(testing.allocator);
        defer walker.deinit();
        while (try walker.next(io)) |entry| try names.append(testing.allocator, try testing.allocator.dupe(u8, entry.path));
        std.mem.sort([]const u8, names.items, {}, struct {
            fn less(_: void, a: []const u8, b: []const u8) bool {
                return std.mem.lessThan(u8, a, b);
            }
        }.less);
        for (names.items) |name| {
            const stat = try dir.statFile(io, name, .{});
            transcript.record(io, "{s}: {t}, {d} bytes", .{ name, stat.kind, stat.size });
        }
        const contents = try dir.readFileAlloc(io, "sub/three", testing.allocator, .limited(1024));
        defer testing.allocator.free(contents);
        transcript.record(io, "sub/three holds {d} lines", .{std.mem.count(u8, contents, "\n")});
        transcript.record(io, "open a missing file: {any}", .{dir.openFile(io, "missing", .{})});
        try dir.deleteFile(io, "one");
        transcript.record(io, "delete twice: {any}", .{dir.deleteFile(io, "one")});
        transcript.record(io, "delete a non-empty directory: {any}", .{dir.deleteDir(io, "sub")});
    }
};

test "differential: files and directories" {
    try differential(FileProgram.run);
}

// -- std.http.Server and std.http.Client over loopback ---------------------------------------

const HttpProgram = struct {
    const requests = 8;

    fn serve(io: Io, server: *net.Server) anyerror!void {
        var served: usize = 0;
        while (served < requests) {
            const stream = try server.accept(io);
            defer stream.close(io);
            var read_buffer: [4096]u8 = undefined;
            var write_buffer: [4096]u8 = undefined;
            var reader = stream.reader(io, &read_buffer);
            var writer = stream.writer(io, &write_buffer);
            var http = std.http.Server.init(&reader.interface, &writer.interface);
            // Several requests may come on one kept-alive connection.
            while (served < requests) {
                var request = http.receiveHead() catch |err| switch (err) {
                    error.HttpConnectionClosing => break,
                    else => |e| return e,
                };
                var body_buffer: [64]u8 = undefined;
                const body = try std.fmt.bufPrint(&body_buffer, "you asked for {s}", .{request.head.target});
                const status: std.http.Status = if (std.mem.endsWith(u8, request.head.target, "/missing")) .not_found else .ok;
                try request.respond(body, .{ .status = status });
                served += 1;
            }
        }
    }

    fn run(io: Io, transcript: *Transcript) anyerror!void {
        var address: net.IpAddress = .{ .ip4 = .loopback(0) };
        var server = try address.listen(io, .{ .reuse_address = true });
        defer server.deinit(io);
        var serving = try io.concurrent(serve, .{ io, &server });
        defer _ = serving.cancel(io) catch {};

        var client: std.http.Client = .{ .allocator = testing.allocator, .io = io };
        defer client.deinit();
        for (0..requests) |i| {
            var url_buffer: [64]u8 = undefined;
            const path = if (i == 3) "missing" else "page";
            const url = try std.fmt.bufPrint(&url_buffer, "http://127.0.0.1:{d}/{d}/{s}", .{ server.socket.address.getPort(), i, path });
            var body: Io.Writer.Allocating = .init(testing.allocator);
            defer body.deinit();
            const result = try client.fetch(.{ .location = .{ .url = url }, .response_writer = &body.writer });
            transcript.record(io, "GET /{d}/{s} -> {d} \"{s}\"", .{ i, path, @intFromEnum(result.status), body.written() });
        }
        try serving.await(io);
    }
};

test "differential: std.http.Server and std.http.Client round trips over loopback" {
    try differential(HttpProgram.run);
}

// -- processes -------------------------------------------------------------------------------

const ProcessProgram = struct {
    fn run(io: Io, transcript: *Transcript) anyerror!void {
        const result = try std.process.run(testing.allocator, io, .{
            .argv = &.{ "/bin/sh", "-c", "printf 'a\\nb\\n'; printf oops >&2; exit 7" },
        });
        defer testing.allocator.free(result.stdout);
        defer testing.allocator.free(result.stderr);
        transcript.record(io, "stdout {any} stderr {any} term {any}", .{ result.stdout, result.stderr, result.term });
        transcript.record(io, "missing program: {any}", .{std.process.spawn(io, .{ .argv = &.{"/nonexistent/program"} })});
    }
};

test "differential: child processes with captured output" {
    try differential(ProcessProgram.run);
}
