//! The I/O driver (Tokio's `io::Driver` + `Handle` + `RegistrationSet`): one edge-triggered
//! epoll instance per runtime, the set of registered descriptors, and an eventfd that
//! interrupts a thread blocked in `epoll_wait`.
//!
//! ## Registration
//!
//! A socket is registered once, when it is created (`register`: a `ScheduledIo` is allocated,
//! linked into `registrations`, and the descriptor added to epoll with `EPOLLIN | EPOLLOUT |
//! EPOLLRDHUP | EPOLLET`, the event's data being the `ScheduledIo` pointer), and deregistered
//! when it is closed (`deregister`: `EPOLL_CTL_DEL`, then the `ScheduledIo` moves to
//! `pending_release`). Nobody registers by hand: the net types do it when they create a socket.
//!
//! ## Turns
//!
//! `turn(timeout)` frees the `ScheduledIo`s deregistered since the last turn, waits in
//! `epoll_wait` for at most `timeout`, and dispatches each event to its `ScheduledIo`
//! (readiness + wake). Only one thread turns at a time — the *driver owner* of the scheduler
//! (see runtime/README.md, "The driver owner") — so `events` needs no lock, and a
//! `ScheduledIo` freed at the start of a turn cannot be in a batch still being dispatched:
//! after `EPOLL_CTL_DEL` the kernel reports nothing more for it, and every batch returned
//! before was dispatched by an earlier turn, which finished before this one began (ownership
//! passes through a seq_cst compare-and-swap, which orders the turns).
//!
//! ## Waking a blocked turn
//!
//! `wakeup` writes to the eventfd (registered edge-triggered with a null data pointer): each
//! write is a new edge, so an `epoll_wait` in progress or the next one returns. The counter is
//! never drained (like mio); a write that would overflow it resets it first. The scheduler's
//! parker calls `wakeup` when it unparks a worker blocked here; `deregister` calls it after
//! `release_batch` deregistrations so that an idle runtime does not hold freed memory for long.
//!
//! ## Shutdown and teardown
//!
//! `shutdown` (Runtime.deinit, after the workers stopped): new registrations fail with
//! `RuntimeShutdown`, and every registered `ScheduledIo` is marked shut down and its waiters
//! woken — in one pass, one lock hold per descriptor, waking outside the driver's lock — so
//! that an operation still waiting (on a `blockOn` or blocking-pool thread) ends with
//! `RuntimeShutdown`. Tasks waiting on I/O are cancelled by the scheduler afterwards, and their
//! futures close what they own. `deinit` frees the released `ScheduledIo`s and closes the epoll
//! and event descriptors; a descriptor still registered then (its owner has not closed it yet)
//! is *orphaned*: its owner's `close` closes the descriptor and frees the `ScheduledIo` itself.
//! Closing concurrently with `deinit` is not allowed (as with any use of a runtime being
//! destroyed).

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;
const linux = std.os.linux;
const Allocator = std.mem.Allocator;

const Lock = @import("../Lock.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const Ready = @import("ready.zig").Ready;
const ScheduledIo = @import("ScheduledIo.zig");

const Driver = @This();

/// Events taken from the kernel per `epoll_wait` (Tokio's default). More stay queued in the
/// kernel for the next turn.
pub const events_max: u32 = 1024;
/// Deregistrations after which a blocked turn is woken to free them (Tokio: 16).
pub const release_batch: u32 = 16;

pub const InitError = posix.EpollCreateError || posix.EventFdError || posix.EpollCtlError;
pub const RegisterError = Allocator.Error || error{ RuntimeShutdown, SystemResources, Unexpected };

/// The epoll data of the eventfd (no `ScheduledIo` lives at address 0).
const wakeup_token: u64 = 0;

allocator: Allocator,
epoll_fd: posix.fd_t,
wakeup_fd: posix.fd_t,
/// Guards `registrations`, `pending_release` and `is_shut_down`.
lock: Lock = .{},
registrations: intrusive_list.List = .{},
pending_release: intrusive_list.List = .{},
/// Length of `pending_release` (written under the lock; read without it by turns).
pending_count: std.atomic.Value(u32) = .init(0),
/// Length of `registrations` (written under the lock; read without it by busy workers
/// deciding whether a non-blocking turn is worth a system call).
registered_count: std.atomic.Value(u32) = .init(0),
is_shut_down: bool = false,
/// Only the thread turning the driver touches this.
events: [events_max]linux.epoll_event = undefined,

/// Initialises in place (the events buffer is large).
pub fn init(self: *Driver, allocator: Allocator) InitError!void {
    const epoll_fd = try posix.epoll_create1(linux.EPOLL.CLOEXEC);
    errdefer posix.close(epoll_fd);
    const wakeup_fd = try posix.eventfd(0, linux.EFD.CLOEXEC | linux.EFD.NONBLOCK);
    errdefer posix.close(wakeup_fd);
    var event = linux.epoll_event{ .events = linux.EPOLL.IN | linux.EPOLL.ET, .data = .{ .u64 = wakeup_token } };
    try posix.epoll_ctl(epoll_fd, linux.EPOLL.CTL_ADD, wakeup_fd, &event);
    self.* = .{ .allocator = allocator, .epoll_fd = epoll_fd, .wakeup_fd = wakeup_fd };
}

/// After every thread that could turn the driver or register with it stopped.
pub fn deinit(self: *Driver) void {
    self.releasePending();
    self.lock.lock();
    while (self.registrations.popFront()) |node| {
        const io = fromLink(node);
        // Release: the owner's acquire in `close` sees everything the driver wrote.
        io.orphaned.store(true, .release);
    }
    self.registered_count.store(0, .monotonic);
    self.lock.unlock();
    posix.close(self.wakeup_fd);
    posix.close(self.epoll_fd);
    self.* = undefined;
}

/// Registers `fd` (non-blocking) for edge-triggered events in both directions. `assumed` is
/// the readiness to start from (an accepted socket is assumed readable and writable, like
/// Tokio's `assume_ready`: a wrong guess costs one `WouldBlock`). On failure nothing is
/// registered and `fd` is left open.
pub fn register(self: *Driver, fd: posix.fd_t, assumed: Ready) RegisterError!*ScheduledIo {
    const io = try self.allocator.create(ScheduledIo);
    io.* = ScheduledIo.init(fd, self.allocator, assumed);
    // Release: the turning thread learns of `io` through the kernel (the event's data), which
    // the memory model cannot see; its acquire load in `dispatch` pairs with this store.
    io.readiness.store(assumed.bits(), .release);
    {
        self.lock.lock();
        defer self.lock.unlock();
        if (self.is_shut_down) {
            self.allocator.destroy(io);
            return error.RuntimeShutdown;
        }
        self.registrations.pushBack(&io.driver_link);
        _ = self.registered_count.fetchAdd(1, .monotonic);
    }
    const E = linux.EPOLL;
    var event = linux.epoll_event{ .events = E.IN | E.OUT | E.RDHUP | E.ET, .data = .{ .u64 = @intFromPtr(io) } };
    posix.epoll_ctl(self.epoll_fd, E.CTL_ADD, fd, &event) catch |err| {
        self.unlink(io);
        self.allocator.destroy(io);
        return switch (err) {
            error.SystemResources, error.UserResourceLimitReached => error.SystemResources,
            error.FileDescriptorAlreadyPresentInSet, error.OperationCausesCircularLoop, error.FileDescriptorNotRegistered, error.FileDescriptorIncompatibleWithEpoll, error.Unexpected => error.Unexpected,
        };
    };
    return io;
}

fn fromLink(node: *intrusive_list.Node) *ScheduledIo {
    return @alignCast(@as(*align(@alignOf(intrusive_list.Node)) ScheduledIo, @fieldParentPtr("driver_link", node)));
}

fn unlink(self: *Driver, io: *ScheduledIo) void {
    self.lock.lock();
    defer self.lock.unlock();
    self.registrations.remove(&io.driver_link);
    _ = self.registered_count.fetchSub(1, .monotonic);
}

/// Removes `io` from epoll; the caller closes the descriptor afterwards. `io` is freed by a
/// later turn (or by `deinit`). No operation may be waiting on it.
pub fn deregister(self: *Driver, io: *ScheduledIo) void {
    assert(!io.hasWaiters()); // Close with an operation pending is a use-after-free waiting to happen.
    posix.epoll_ctl(self.epoll_fd, linux.EPOLL.CTL_DEL, io.fd, null) catch |err| {
        std.debug.panic("EPOLL_CTL_DEL of fd {d} failed: {s}", .{ io.fd, @errorName(err) });
    };
    const pending = blk: {
        self.lock.lock();
        defer self.lock.unlock();
        self.registrations.remove(&io.driver_link);
        _ = self.registered_count.fetchSub(1, .monotonic);
        self.pending_release.pushBack(&io.driver_link);
        const pending = self.pending_count.load(.monotonic) + 1;
        // Release: pairs with the acquire in `releasePending`.
        self.pending_count.store(pending, .release);
        break :blk pending;
    };
    if (pending == release_batch) self.wakeup();
}

/// Frees the `ScheduledIo`s deregistered before this call. Only the turning thread (or deinit).
fn releasePending(self: *Driver) void {
    if (self.pending_count.load(.acquire) == 0) return;
    var released: intrusive_list.List = .{};
    {
        self.lock.lock();
        defer self.lock.unlock();
        released = self.pending_release;
        self.pending_release = .{};
        self.pending_count.store(0, .monotonic);
    }
    while (released.popFront()) |node| {
        self.allocator.destroy(fromLink(node));
    }
}

/// Whether any descriptor is registered (a busy worker's non-blocking turn is skipped when
/// none is: there is nothing it could find).
pub fn hasRegistrations(self: *const Driver) bool {
    return self.registered_count.load(.monotonic) != 0;
}

/// Waits up to `timeout_ns` (null: until an event or `wakeup`; 0: not at all) and dispatches
/// the events. Returns the number of descriptor events dispatched (wake-ups not counted).
/// Only the driver owner may call it (see the module comment).
pub fn turn(self: *Driver, timeout_ns: ?u64) usize {
    self.releasePending();
    const timeout_ms: i32 = if (timeout_ns) |ns|
        @intCast(@min(std.math.divCeil(u64, ns, std.time.ns_per_ms) catch unreachable, std.math.maxInt(i32)))
    else
        -1;
    const count = posix.epoll_wait(self.epoll_fd, &self.events, timeout_ms);
    assert(count <= events_max);
    var dispatched: usize = 0;
    for (self.events[0..count]) |event| {
        if (event.data.u64 == wakeup_token) continue;
        const io: *ScheduledIo = @ptrFromInt(event.data.u64);
        io.dispatch(Ready.fromEpoll(event.events));
        dispatched += 1;
    }
    return dispatched;
}

/// Makes a turn blocked in `epoll_wait` (or the next one) return. Any thread.
pub fn wakeup(self: *Driver) void {
    const one: u64 = 1;
    var attempts: u32 = 0;
    while (attempts < 2) : (attempts += 1) {
        const rc = linux.write(self.wakeup_fd, std.mem.asBytes(&one), @sizeOf(u64));
        switch (posix.errno(rc)) {
            .SUCCESS => return,
            .INTR => continue,
            .AGAIN => {
                // The counter is full (2^64 - 2 unread wake-ups): reset it; a new write is a new edge.
                var sink: u64 = 0;
                _ = linux.read(self.wakeup_fd, std.mem.asBytes(&sink), @sizeOf(u64));
            },
            else => |err| std.debug.panic("eventfd write failed: {s}", .{@tagName(err)}),
        }
    }
    std.debug.panic("eventfd write kept failing", .{});
}

/// Runtime shutdown: no new registrations; every waiter now and later ends with
/// `RuntimeShutdown` (see the module comment).
pub fn shutdown(self: *Driver) void {
    _ = self.shutdownCounted();
}

/// `shutdown`, returning how many registrations its wake pass visited: one per descriptor
/// registered when it began (the tests check that the pass is linear).
fn shutdownCounted(self: *Driver) u32 {
    const registered = blk: {
        self.lock.lock();
        defer self.lock.unlock();
        self.is_shut_down = true;
        var cursor = self.registrations.first();
        while (cursor) |node| : (cursor = node.next) {
            fromLink(node).markShutdown();
        }
        break :blk self.registered_count.load(.monotonic);
    };
    // Wake outside the driver's lock, one descriptor per step: each step moves the first
    // registration to the back of the list and wakes its waiters (marked already, none can
    // link themselves any more). No turn runs (the workers stopped), so no `ScheduledIo` is
    // freed meanwhile; one closed meanwhile has left the list (to `pending_release`), and the
    // pass then revisits a few it woke, which is harmless. No registration is added (shut
    // down), so `registered` steps reach every descriptor: linear, where walking the list
    // from its head again after each wake-up was quadratic.
    var visited: u32 = 0;
    while (visited < registered) : (visited += 1) {
        const io = self.rotateFirst() orelse break;
        io.wake(Ready.all);
    }
    return visited;
}

/// Moves the first registration to the back of the list and returns it (shutdown's pass).
fn rotateFirst(self: *Driver) ?*ScheduledIo {
    self.lock.lock();
    defer self.lock.unlock();
    assert(self.is_shut_down);
    const node = self.registrations.popFront() orelse return null;
    self.registrations.pushBack(node);
    return fromLink(node);
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;
const Waker = @import("../Waker.zig");
const future = @import("../future.zig");

fn socketPair() ![2]posix.fd_t {
    var fds: [2]posix.fd_t = undefined;
    const rc = linux.socketpair(linux.AF.UNIX, linux.SOCK.STREAM | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, 0, &fds);
    if (posix.errno(rc) != .SUCCESS) return error.SocketPairFailed;
    return fds;
}

fn closeRegistered(driver: *Driver, io: *ScheduledIo) void {
    const fd = io.fd;
    driver.deregister(io);
    posix.close(fd);
}

test "a write to the peer makes the registered end readable and wakes its waiter" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    const fds = try socketPair();
    defer posix.close(fds[1]);
    const io = try driver.register(fds[0], Ready.empty);
    defer closeRegistered(&driver, io);
    try testing.expect(driver.hasRegistrations());

    // Registration reports the current state at once: writable.
    try testing.expectEqual(@as(usize, 1), driver.turn(0));
    try testing.expect(io.event(Ready.write_interest).ready.writable);
    try testing.expect(io.event(Ready.read_interest).ready.isEmpty());

    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var waiter = ScheduledIo.Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&waiter, &cx) == null);
    try testing.expectEqual(@as(usize, 0), driver.turn(0));
    _ = try posix.write(fds[1], "x");
    try testing.expectEqual(@as(usize, 1), driver.turn(0));
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(io.pollReady(&waiter, &cx).?.ready.readable);
    // The peer closes: read-closed, final.
    _ = try posix.shutdown(fds[1], .send);
    try testing.expectEqual(@as(usize, 1), driver.turn(0));
    try testing.expect(io.event(Ready.read_interest).ready.read_closed);
}

test "wakeup interrupts a blocked turn from another thread" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    const Waker_ = struct {
        fn run(d: *Driver) void {
            std.Thread.sleep(5 * std.time.ns_per_ms);
            d.wakeup();
        }
    };
    const thread = try std.Thread.spawn(.{}, Waker_.run, .{&driver});
    try testing.expectEqual(@as(usize, 0), driver.turn(null)); // Returns: no hang.
    thread.join();
    driver.wakeup(); // A wake-up before the turn makes it return at once too.
    try testing.expectEqual(@as(usize, 0), driver.turn(null));
}

test "deregistered descriptors are freed by the next turn; shutdown ends waits; orphans outlive the driver" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    var released: [release_batch + 3]*ScheduledIo = undefined;
    var peers: [released.len]posix.fd_t = undefined;
    for (&released, &peers) |*io, *peer| {
        const fds = try socketPair();
        io.* = try driver.register(fds[0], Ready.empty);
        peer.* = fds[1];
    }
    for (released, peers) |io, peer| {
        closeRegistered(&driver, io);
        posix.close(peer);
    }
    try testing.expect(!driver.hasRegistrations());
    try testing.expectEqual(@as(u32, released.len), driver.pending_count.load(.acquire));
    _ = driver.turn(0); // Frees them (testing.allocator checks nothing leaks).
    try testing.expectEqual(@as(u32, 0), driver.pending_count.load(.acquire));

    const fds = try socketPair();
    defer posix.close(fds[1]);
    const kept = try driver.register(fds[0], Ready.empty);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var waiter = ScheduledIo.Waiter.init(Ready.read_interest);
    try testing.expect(kept.pollReady(&waiter, &cx) == null);
    driver.shutdown();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(kept.pollReady(&waiter, &cx).?.is_shutdown);
    try testing.expectError(error.RuntimeShutdown, driver.register(fds[1], Ready.empty));
    driver.deinit();
    // The owner closes after the driver is gone.
    try testing.expect(kept.orphaned.load(.acquire));
    posix.close(kept.fd);
    kept.allocator.destroy(kept);
}

test "shutdown wakes every waiter in one linear pass over the registrations" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    const count = 64;
    var ios: [count]*ScheduledIo = undefined;
    var peers: [count]posix.fd_t = undefined;
    var waiters: [count]ScheduledIo.Waiter = undefined;
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    for (&ios, &peers, &waiters) |*io, *peer, *waiter| {
        const fds = try socketPair();
        io.* = try driver.register(fds[0], Ready.empty);
        peer.* = fds[1];
        waiter.* = ScheduledIo.Waiter.init(Ready.read_interest);
        try testing.expect(io.*.pollReady(waiter, &cx) == null);
    }
    defer for (ios, peers) |io, peer| {
        closeRegistered(&driver, io);
        posix.close(peer);
    };
    // Walking from the head again after each descriptor with waiters visited 64·65/2 = 2,080.
    try testing.expectEqual(@as(u32, count), driver.shutdownCounted());
    try testing.expectEqual(@as(u32, count), counter.wakeCount());
    for (ios, &waiters) |io, *waiter| try testing.expect(io.pollReady(waiter, &cx).?.is_shutdown);
}
