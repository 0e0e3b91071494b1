//! An intrusive, doubly-linked list of waiter nodes.
//!
//! Wait queues in Ampere never allocate: the node that sits in a queue is a field of the
//! future that waits (`link: intrusive_list.Node`), linked in on its first pending poll and
//! unlinked when it is served or cancelled. The future must therefore not move while its node
//! is linked (see the pinning rule in future.zig).
//!
//! API (all O(1); none of it is thread-safe: the owner of the list protects the list *and the
//! links of every node in it* with its own lock):
//!
//!     Node                    embed in your waiter struct; recover the struct with
//!                             `entry(Waiter, "link", node)` (= `@fieldParentPtr`).
//!     List                    `.{}` is the empty list.
//!       isEmpty()             true when no node is linked.
//!       first()               the oldest node, or null.
//!       pushBack(node)        appends an unlinked node (FIFO order: oldest at the front).
//!       pushFront(node)       prepends an unlinked node.
//!       popFront()            unlinks and returns the oldest node, or null.
//!       remove(node)          unlinks `node`, which must be linked in this list or in a
//!                             `Detached` ring taken from it (see below).
//!       takeAll(&detached)    moves every node into `detached` and leaves the list empty.
//!     Detached                a ring closed by a guard node that lives in the `Detached`
//!                             value itself (so that value must not move while it is used).
//!       init()                call once on the final address: `var d: Detached = undefined; d.init();`
//!       isEmpty(), popFront()
//!
//! Why `Detached`: "wake every current waiter" must wake outside the lock, in bounded batches
//! (no allocation), so it releases the lock between batches. Waiters that register during
//! those windows must not be served by this wake-all, and waiters still waiting in the batch
//! queue must still be able to cancel. `takeAll` moves the current waiters out of the list in
//! O(1) into a ring whose every node has non-null `prev` and `next` (the guard closes it), so
//! `List.remove` called by a cancelling waiter unlinks it from the ring without touching the
//! list's head or tail, exactly as it would unlink it from the list. (Tokio's Notify uses the
//! same guard-node trick in `notify_waiters`.)
//!
//! Invariants: a node is linked iff it is the head of its list or its `prev` is non-null; an
//! unlinked node has `prev == next == null`. In a List, `head.prev == null` and
//! `tail.next == null`; in a Detached ring no pointer is null.

const std = @import("std");
const assert = std.debug.assert;

pub const Node = struct {
    prev: ?*Node = null,
    next: ?*Node = null,
};

/// The struct that embeds `node` as its field `field`.
pub inline fn entry(comptime T: type, comptime field: []const u8, node: *Node) *T {
    return @fieldParentPtr(field, node);
}

pub const List = struct {
    head: ?*Node = null,
    tail: ?*Node = null,

    pub fn isEmpty(self: *const List) bool {
        assert((self.head == null) == (self.tail == null));
        return self.head == null;
    }

    pub fn first(self: *const List) ?*Node {
        return self.head;
    }

    pub fn pushBack(self: *List, node: *Node) void {
        assert(node.prev == null and node.next == null);
        assert(self.head != node);
        node.prev = self.tail;
        if (self.tail) |tail| {
            assert(tail.next == null);
            tail.next = node;
        } else {
            self.head = node;
        }
        self.tail = node;
    }

    pub fn pushFront(self: *List, node: *Node) void {
        assert(node.prev == null and node.next == null);
        assert(self.head != node);
        node.next = self.head;
        if (self.head) |head| {
            assert(head.prev == null);
            head.prev = node;
        } else {
            self.tail = node;
        }
        self.head = node;
    }

    pub fn popFront(self: *List) ?*Node {
        const node = self.head orelse return null;
        self.remove(node);
        return node;
    }

    /// Unlinks `node` from this list, or from a `Detached` ring taken from this list.
    pub fn remove(self: *List, node: *Node) void {
        assert(node.prev != null or self.head == node); // linked
        if (node.prev) |prev| {
            assert(prev.next == node);
            prev.next = node.next;
        } else {
            self.head = node.next;
        }
        if (node.next) |next| {
            assert(next.prev == node);
            next.prev = node.prev;
        } else {
            assert(self.tail == node);
            self.tail = node.prev;
        }
        node.prev = null;
        node.next = null;
    }

    /// Moves every node into `detached` (initialised, empty, at its final address).
    pub fn takeAll(self: *List, detached: *Detached) void {
        assert(detached.isEmpty());
        const head = self.head orelse return;
        const tail = self.tail.?;
        const guard = &detached.guard;
        head.prev = guard;
        tail.next = guard;
        guard.next = head;
        guard.prev = tail;
        self.head = null;
        self.tail = null;
    }
};

pub const Detached = struct {
    guard: Node,

    pub fn init(self: *Detached) void {
        self.guard = .{ .prev = &self.guard, .next = &self.guard };
    }

    pub fn isEmpty(self: *const Detached) bool {
        assert((self.guard.next == &self.guard) == (self.guard.prev == &self.guard));
        return self.guard.next == &self.guard;
    }

    pub fn popFront(self: *Detached) ?*Node {
        const node = self.guard.next.?;
        if (node == &self.guard) return null;
        const next = node.next.?;
        self.guard.next = next;
        next.prev = &self.guard;
        node.prev = null;
        node.next = null;
        return node;
    }
};

const TestItem = struct {
    value: u32,
    link: Node = .{},
};

fn popValue(list: *List) ?u32 {
    const node = list.popFront() orelse return null;
    return entry(TestItem, "link", node).value;
}

test "FIFO push and pop" {
    var items: [4]TestItem = undefined;
    for (&items, 0..) |*item, i| item.* = .{ .value = @intCast(i) };
    var list = List{};
    try std.testing.expect(list.isEmpty());
    for (&items) |*item| list.pushBack(&item.link);
    for (0..4) |i| try std.testing.expectEqual(@as(?u32, @intCast(i)), popValue(&list));
    try std.testing.expectEqual(@as(?u32, null), popValue(&list));
    list.pushBack(&items[1].link);
    list.pushFront(&items[0].link);
    try std.testing.expectEqual(@as(?u32, 0), popValue(&list));
    try std.testing.expectEqual(@as(?u32, 1), popValue(&list));
    try std.testing.expect(list.isEmpty());
}

test "remove from head, middle and tail" {
    var items: [5]TestItem = undefined;
    for (&items, 0..) |*item, i| item.* = .{ .value = @intCast(i) };
    var list = List{};
    for (&items) |*item| list.pushBack(&item.link);
    list.remove(&items[2].link);
    list.remove(&items[0].link);
    list.remove(&items[4].link);
    try std.testing.expectEqual(@as(?u32, 1), popValue(&list));
    try std.testing.expectEqual(@as(?u32, 3), popValue(&list));
    try std.testing.expect(list.isEmpty());
    // A removed node can be linked again.
    list.pushBack(&items[2].link);
    try std.testing.expectEqual(@as(?u32, 2), popValue(&list));
}

test "takeAll detaches a ring that nodes can still leave through List.remove" {
    var items: [4]TestItem = undefined;
    for (&items, 0..) |*item, i| item.* = .{ .value = @intCast(i) };
    var list = List{};
    var detached: Detached = undefined;
    detached.init();
    list.takeAll(&detached); // empty list: nothing moves
    try std.testing.expect(detached.isEmpty());
    for (&items) |*item| list.pushBack(&item.link);
    list.takeAll(&detached);
    try std.testing.expect(list.isEmpty());
    // New nodes go to the (now empty) list, not into the ring.
    var late = TestItem{ .value = 9 };
    list.pushBack(&late.link);
    // A waiter in the ring cancels: removal through the list leaves the list untouched.
    list.remove(&items[0].link);
    list.remove(&items[2].link);
    try std.testing.expectEqual(@as(?*Node, &late.link), list.first());
    try std.testing.expectEqual(&items[1].link, detached.popFront().?);
    list.remove(&items[3].link);
    try std.testing.expect(detached.isEmpty());
    try std.testing.expectEqual(@as(?*Node, null), detached.popFront());
    try std.testing.expectEqual(@as(?u32, 9), popValue(&list));
}
