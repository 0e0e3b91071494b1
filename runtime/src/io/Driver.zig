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
//! `registrations` is exactly the set of sockets still open, which is what `deinit` closes.
//!
//! A `ScheduledIo` is reference-counted (ScheduledIo.zig, "Lifetime: references"): the
//! driver holds one reference from registration until the first turn after deregistration,
//! the open registration one, and every operation that has waited on it one. The driver never
//! frees a `ScheduledIo` directly; it drops its reference, and the last holder frees it.
//!
//! ## Turns
//!
//! `turn(timeout)` drops its reference to the `ScheduledIo`s deregistered since the last turn
//! (freeing those nobody else holds), waits in
//! `epoll_wait` for at most `timeout`, and dispatches each event to its `ScheduledIo`
//! (readiness + wake). Only one thread turns at a time — the *driver owner* of the scheduler
//! (see runtime/README.md, "The driver owner") — so `events` needs no lock, and a
//! `ScheduledIo` released at the start of a turn cannot be in a batch still being dispatched:
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
//! futures close what they own — or should: a future whose `cancel` leaves its socket open
//! would leak it. So `deinit` (after every runtime thread stopped) closes what is still
//! registered: it drops the open registration's reference and its own of every socket still
//! in `registrations` (the last user closes the descriptor, the last reference frees the
//! `ScheduledIo`; an operation on an outside thread that still waits keeps both until it
//! finishes), releases `pending_release`, and closes the epoll and event descriptors.
//!
//! ## Handles that outlive the driver
//!
//! A socket handle (`Registration`: the driver, the `ScheduledIo`, and the driver's `key`) may
//! be used after `deinit`: its operations must fail with `RuntimeShutdown` and its `close` must
//! do nothing — the descriptor was closed, and its number may already belong to another file,
//! so a second `close` would close that one. The handle cannot ask its `ScheduledIo` (freed)
//! or the driver (freed), so it asks `live`: a process-wide table of the keys of the drivers
//! that exist, one slot per driver (`drivers_max`). A key is `epoch * drivers_max + slot`, the
//! epoch counting every driver ever created, so a key is never reused, and a handle of a
//! destroyed driver never matches the slot's next owner. `init` claims a free slot with a
//! compare-and-swap (0 -> key), `deinit` stores 0 (release) before it closes anything; a
//! handle loads its slot (acquire) before it touches the `ScheduledIo` without holding a
//! reference (`Registration.isLive`). A driver being destroyed must not be used concurrently
//! (no thread of the runtime runs any more; other threads must be done with its sockets, as
//! with any use of a runtime being destroyed), so the check is not a race with `deinit`, only
//! with what came before it. Cost: one load of a read-shared line per operation poll without a
//! reference, none while waiting.

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;
const linux = std.os.linux;
const Allocator = std.mem.Allocator;

const Lock = @import("../Lock.zig");
const os = @import("../os.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const Ready = @import("ready.zig").Ready;
const ScheduledIo = @import("ScheduledIo.zig");

const Driver = @This();

/// Events taken from the kernel per `epoll_wait` (Tokio's default). More stay queued in the
/// kernel for the next turn.
pub const events_max: u32 = 1024;
/// Deregistrations after which a blocked turn is woken to free them (Tokio: 16).
pub const release_batch: u32 = 16;

/// Drivers that may exist at once in a process (see "Handles that outlive the driver").
pub const drivers_max: u32 = 1024;

pub const InitError = os.EpollCreateError || os.EventFdError || os.EpollCtlError || error{TooManyDrivers};
pub const RegisterError = Allocator.Error || error{ RuntimeShutdown, SystemResources, Unexpected };

/// The epoll data of the eventfd (no `ScheduledIo` lives at address 0).
const wakeup_token: u64 = 0;

allocator: Allocator,
/// This driver's key in `live` (see "Handles that outlive the driver").
key: u64,
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
    const epoll_fd = try os.epollCreate1(linux.EPOLL.CLOEXEC);
    errdefer os.close(epoll_fd);
    const wakeup_fd = try os.eventfd(0, linux.EFD.CLOEXEC | linux.EFD.NONBLOCK);
    errdefer os.close(wakeup_fd);
    var event = linux.epoll_event{ .events = linux.EPOLL.IN | linux.EPOLL.ET, .data = .{ .u64 = wakeup_token } };
    try os.epollCtl(epoll_fd, linux.EPOLL.CTL_ADD, wakeup_fd, &event);
    const key = try live.claim();
    self.* = .{ .allocator = allocator, .key = key, .epoll_fd = epoll_fd, .wakeup_fd = wakeup_fd };
}

/// After every thread that could turn the driver or register with it stopped. Closes every
/// socket still registered (see "Shutdown and teardown").
pub fn deinit(self: *Driver) void {
    if (!self.is_shut_down) self.shutdown();
    // First: from here on, handles of this driver fail (or do nothing) without touching it.
    live.retire(self.key);
    self.releasePending();
    // No other thread registers or deregisters now: the list is ours without the lock.
    while (self.registrations.popFront()) |node| {
        const io = fromLink(node);
        io.releaseUser(); // The open registration's: closes the descriptor if nobody waits.
        io.releaseDriver();
    }
    self.registered_count.store(0, .monotonic);
    os.close(self.wakeup_fd);
    os.close(self.epoll_fd);
    self.* = undefined;
}

/// Whether handles with `key` may still use their driver (see "Handles that outlive the
/// driver").
pub fn isLive(key: u64) bool {
    return live.contains(key);
}

/// The process-wide table of live drivers (see "Handles that outlive the driver").
const live = struct {
    var slots: [drivers_max]std.atomic.Value(u64) = @splat(.init(0));
    /// Drivers created so far (the epoch of the next key); starts at 1 so that no key is 0.
    var epochs: std.atomic.Value(u64) = .init(1);

    fn claim() error{TooManyDrivers}!u64 {
        const epoch = epochs.fetchAdd(1, .monotonic);
        var probe: u32 = 0;
        while (probe < drivers_max) : (probe += 1) {
            const slot: u32 = @intCast((epoch + probe) % drivers_max);
            const key = epoch * drivers_max + slot;
            if (slots[slot].cmpxchgStrong(0, key, .monotonic, .monotonic) == null) return key;
        }
        return error.TooManyDrivers;
    }

    fn contains(key: u64) bool {
        // Acquire: pairs with `retire`'s release (see the module comment).
        return slots[key % drivers_max].load(.acquire) == key;
    }

    fn retire(key: u64) void {
        assert(contains(key));
        slots[key % drivers_max].store(0, .release);
    }
};

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
    os.epollCtl(self.epoll_fd, E.CTL_ADD, fd, &event) catch |err| {
        self.unlink(io);
        self.allocator.destroy(io);
        return switch (err) {
            error.SystemResources, error.UserResourceLimitReached => error.SystemResources,
            error.FileDescriptorAlreadyPresentInSet, error.OperationCausesCircularLoop, error.FileDescriptorNotRegistered, error.FileDescriptorIncompatibleWithEpoll => error.Unexpected,
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

/// Removes `io` from epoll and hands the driver's reference to the next turn (or `deinit`).
/// The caller holds the open registration's reference (the descriptor is open) and drops it
/// afterwards; operations may still be waiting (`ScheduledIo.close` woke them).
pub fn deregister(self: *Driver, io: *ScheduledIo) void {
    os.epollCtl(self.epoll_fd, linux.EPOLL.CTL_DEL, io.fd, null) catch |err| {
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

/// Drops the driver's reference to the `ScheduledIo`s deregistered before this call (freeing
/// those nobody else holds). Only the turning thread (or deinit).
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
    while (released.popFront()) |node| fromLink(node).releaseDriver();
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
    // A signal ends the wait early with no events (`os.epollWaitNs`): like a spurious wake-up,
    // the caller recomputes its timeout and turns again (it used to restart with the whole
    // timeout: a signal every 5 ms held a 50 ms timer back ~500 ms). The timeout keeps its
    // nanoseconds: a timer tick's deadline is met when it falls, not up to 1 ms later.
    const count = os.epollWaitNs(self.epoll_fd, &self.events, timeout_ns);
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
        switch (linux.errno(rc)) {
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
const CountingAllocator = @import("../CountingAllocator.zig");

fn socketPair() ![2]posix.fd_t {
    var fds: [2]posix.fd_t = undefined;
    const rc = linux.socketpair(linux.AF.UNIX, linux.SOCK.STREAM | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, 0, &fds);
    if (linux.errno(rc) != .SUCCESS) return error.SocketPairFailed;
    return fds;
}

/// What `Registration.close` does.
fn closeRegistered(driver: *Driver, io: *ScheduledIo) void {
    io.close();
    driver.deregister(io);
    io.releaseUser();
}

/// True if the peer of a socket pair sees its other end closed (end of stream).
fn peerSeesEof(peer: posix.fd_t) !bool {
    var buffer: [8]u8 = undefined;
    const count = posix.read(peer, &buffer) catch |err| switch (err) {
        error.WouldBlock => return false,
        else => return err,
    };
    return count == 0;
}

test "a write to the peer makes the registered end readable and wakes its waiter" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    const fds = try socketPair();
    defer os.close(fds[1]);
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
    try testing.expectEqual(@as(usize, 1), linux.write(fds[1], "x", 1));
    try testing.expectEqual(@as(usize, 1), driver.turn(0));
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(io.pollReady(&waiter, &cx).?.ready.readable);
    io.releaseWaiter(&waiter); // Its first link took a reference.
    // The peer closes: read-closed, final.
    try testing.expectEqual(linux.E.SUCCESS, linux.errno(linux.shutdown(fds[1], linux.SHUT.WR)));
    try testing.expectEqual(@as(usize, 1), driver.turn(0));
    try testing.expect(io.event(Ready.read_interest).ready.read_closed);
}

test "wakeup interrupts a blocked turn from another thread" {
    var driver: Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    const Waker_ = struct {
        fn run(d: *Driver) void {
            os.sleepNs(5 * std.time.ns_per_ms);
            d.wakeup();
        }
    };
    const thread = try std.Thread.spawn(.{}, Waker_.run, .{&driver});
    try testing.expectEqual(@as(usize, 0), driver.turn(null)); // Returns: no hang.
    thread.join();
    driver.wakeup(); // A wake-up before the turn makes it return at once too.
    try testing.expectEqual(@as(usize, 0), driver.turn(null));
}

test "deregistered descriptors are freed by the next turn; shutdown ends waits; deinit closes what is still registered" {
    var counting = CountingAllocator.init(testing.allocator);
    var driver: Driver = undefined;
    try driver.init(counting.allocator());
    var released: [release_batch + 3]*ScheduledIo = undefined;
    var peers: [released.len]posix.fd_t = undefined;
    for (&released, &peers) |*io, *peer| {
        const fds = try socketPair();
        io.* = try driver.register(fds[0], Ready.empty);
        peer.* = fds[1];
    }
    for (released, peers) |io, peer| {
        closeRegistered(&driver, io);
        try testing.expect(try peerSeesEof(peer)); // Nobody waited: closed at once.
        os.close(peer);
    }
    try testing.expect(!driver.hasRegistrations());
    try testing.expectEqual(@as(u32, released.len), driver.pending_count.load(.acquire));
    _ = driver.turn(0); // Frees them.
    try testing.expectEqual(@as(u32, 0), driver.pending_count.load(.acquire));
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());

    // Two sockets left open at deinit, one with a waiter (an operation on a thread outside
    // the runtime), one without.
    const waited = try socketPair();
    defer os.close(waited[1]);
    const idle = try socketPair();
    defer os.close(idle[1]);
    const kept = try driver.register(waited[0], Ready.empty);
    _ = try driver.register(idle[0], Ready.empty);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var waiter = ScheduledIo.Waiter.init(Ready.read_interest);
    try testing.expect(kept.pollReady(&waiter, &cx) == null);
    driver.shutdown();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(kept.pollReady(&waiter, &cx).?.is_shutdown);
    try testing.expectError(error.RuntimeShutdown, driver.register(waited[1], Ready.empty));
    driver.deinit();
    // The idle one is closed and freed; the waited-on one stays open (its operation may still
    // run a system call on it) and allocated until the operation lets go.
    try testing.expect(try peerSeesEof(idle[1]));
    try testing.expect(!try peerSeesEof(waited[1]));
    try testing.expectEqual(@as(i64, @sizeOf(ScheduledIo)), counting.liveBytes());
    kept.releaseWaiter(&waiter);
    try testing.expect(try peerSeesEof(waited[1]));
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
}

test "the table of live drivers: a key is live from init to deinit and never again" {
    var first: Driver = undefined;
    try first.init(testing.allocator);
    const first_key = first.key;
    try testing.expect(isLive(first_key));
    var second: Driver = undefined;
    try second.init(testing.allocator);
    try testing.expect(second.key != first_key);
    first.deinit();
    try testing.expect(!isLive(first_key));
    try testing.expect(isLive(second.key));
    // A driver that takes the freed slot gets another key: old handles stay dead.
    var third: Driver = undefined;
    try third.init(testing.allocator);
    defer third.deinit();
    try testing.expect(!isLive(first_key));
    second.deinit();
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
        os.close(peer);
    };
    // Walking from the head again after each descriptor with waiters visited 64·65/2 = 2,080.
    try testing.expectEqual(@as(u32, count), driver.shutdownCounted());
    try testing.expectEqual(@as(u32, count), counter.wakeCount());
    for (ios, &waiters) |io, *waiter| {
        try testing.expect(io.pollReady(waiter, &cx).?.is_shutdown);
        io.releaseWaiter(waiter); // The operation is over: its reference goes (ScheduledIo.zig).
    }
}
