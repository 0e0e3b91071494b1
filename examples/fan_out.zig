//! Fan-out / fan-in with `std.Io.Group` and `std.Io.Queue`, run on Ampere's fibers.
//!
//!     zig build examples && ./zig-out/bin/fan_out 1000000
//!
//! Counts the primes below N: the range is cut into chunks, each chunk is a fiber of one
//! group (fan-out, spread over the worker threads by work stealing), and every fiber puts its
//! count into a queue that the caller drains (fan-in). `firstChunkWins` shows cancellation:
//! the group is canceled as soon as the first chunk reports, and the chunks still running stop
//! at their next cancellation point (`io.checkCancel()` in their loop).

const std = @import("std");
const ampere = @import("ampere");
const Io = std.Io;

const Count = struct { first: u64, primes: u64 };

fn isPrime(n: u64) bool {
    if (n < 2) return false;
    var d: u64 = 2;
    while (d * d <= n) : (d += 1) if (n % d == 0) return false;
    return true;
}

fn countChunk(io: Io, first: u64, end: u64, results: *Io.Queue(Count)) Io.Cancelable!void {
    var primes: u64 = 0;
    var n = first;
    while (n < end) : (n += 1) {
        if (n % 1024 == 0) try io.checkCancel(); // CPU-bound: poll for cancellation.
        if (isPrime(n)) primes += 1;
    }
    results.putOne(io, .{ .first = first, .primes = primes }) catch |err| switch (err) {
        error.Canceled => |e| return e,
        error.Closed => {},
    };
}

/// Counts the primes below `limit` in `chunks` fibers.
pub fn countPrimes(io: Io, limit: u64, chunks: u64) !u64 {
    var buffer: [16]Count = undefined;
    var results = Io.Queue(Count).init(&buffer);
    var group: Io.Group = .init;
    defer group.cancel(io);
    const step = std.math.divCeil(u64, limit, chunks) catch unreachable;
    var first: u64 = 0;
    while (first < limit) : (first += step) {
        try group.concurrent(io, countChunk, .{ io, first, @min(limit, first + step), &results });
    }
    var total: u64 = 0;
    for (0..chunks) |_| total += (try results.getOne(io)).primes;
    try group.await(io);
    return total;
}

/// Stops every chunk as soon as the first one reports: returns how many chunks finished
/// (the first, and any that finished before the cancellation reached them).
pub fn firstChunkWins(io: Io, limit: u64, chunks: u64) !u64 {
    var buffer: [64]Count = undefined; // Room for every result: a put never waits.
    var results = Io.Queue(Count).init(&buffer);
    var group: Io.Group = .init;
    const step = std.math.divCeil(u64, limit, chunks) catch unreachable;
    var first: u64 = 0;
    while (first < limit) : (first += step) {
        try group.concurrent(io, countChunk, .{ io, first, @min(limit, first + step), &results });
    }
    _ = try results.getOne(io);
    group.cancel(io); // The others stop at their next checkCancel.
    var rest: [64]Count = undefined;
    return 1 + try results.get(io, &rest, 0);
}

pub fn main(init: std.process.Init) !void {
    var args = init.minimal.args.iterate();
    _ = args.skip();
    const limit = if (args.next()) |text| try std.fmt.parseInt(u64, text, 10) else 1_000_000;

    const rt = try ampere.Runtime.init(init.gpa, .{ .environ = init.minimal.environ });
    defer rt.deinit();
    const io = rt.io();
    var counting = try io.concurrent(countPrimes, .{ io, limit, 64 });
    std.debug.print("{d} primes below {d}\n", .{ try counting.await(io), limit });
}

test "fan-out/fan-in counts the primes below 100000 like a single loop does" {
    const rt = try ampere.Runtime.init(std.testing.allocator, .{ .workers = 4 });
    defer rt.deinit();
    const io = rt.io();
    var expected: u64 = 0;
    for (0..100_000) |n| expected += @intFromBool(isPrime(n));
    var counting = try io.concurrent(countPrimes, .{ io, 100_000, 37 });
    try std.testing.expectEqual(expected, try counting.await(io));
    try std.testing.expectEqual(@as(u64, 9592), expected);

    var racing = try io.concurrent(firstChunkWins, .{ io, 1_000_000, 16 });
    const finished = try racing.await(io);
    try std.testing.expect(finished >= 1 and finished <= 16);
}
