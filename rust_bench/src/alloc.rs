//! Allocation counting: a `#[global_allocator]` wrapper around `System` (glibc malloc).
//!
//! Counted exactly like the Zig side's CountingAllocator: each allocation (`alloc`,
//! `alloc_zeroed`: +1 count, +size bytes) and each growing `realloc` (+1, +new size); frees
//! and shrinking reallocations are not counted.
//!
//! Ordering: the counters are process-wide totals. They are reset by the measuring thread
//! right before an iteration and read by it right after, once every task of the iteration
//! has been joined; the join (JoinHandle completion, oneshot receive) gives the
//! happens-before edge from the workers' increments to the read, so `Relaxed` suffices.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

static BYTES: AtomicU64 = AtomicU64::new(0);
static COUNT: AtomicU64 = AtomicU64::new(0);

pub struct CountingAlloc;

#[inline]
fn record(size: usize) {
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
    COUNT.fetch_add(1, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let result = unsafe { System.realloc(ptr, layout, new_size) };
        if !result.is_null() && new_size > layout.size() {
            record(new_size);
        }
        result
    }
}

/// Allocation totals since the last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub bytes: u64,
    pub count: u64,
}

pub fn reset() {
    BYTES.store(0, Ordering::Relaxed);
    COUNT.store(0, Ordering::Relaxed);
}

pub fn read() -> Counts {
    Counts { bytes: BYTES.load(Ordering::Relaxed), count: COUNT.load(Ordering::Relaxed) }
}

/// One measured iteration (or echo batch): wall time and allocations during it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub elapsed_ns: u64,
    pub alloc_bytes: u64,
    pub alloc_count: u64,
}

/// The start of a timed region. `start` resets the allocation counters and then reads the
/// monotonic clock (CLOCK_MONOTONIC via `Instant`); `stop` reads the clock and then the
/// counters. Everything between the two calls is the timed region; both sides of the
/// benchmark use the same bracket (the Zig side's `Mark`).
pub struct Mark {
    started: Instant,
}

impl Mark {
    #[inline]
    pub fn start() -> Mark {
        reset();
        Mark { started: Instant::now() }
    }

    #[inline]
    pub fn stop(self) -> Sample {
        let elapsed = self.started.elapsed();
        let counts = read();
        // A zero-length sample is impossible on a monotonic clock with real work; clamp to 1
        // so that the CSV contract (elapsed_ns > 0) holds even for a degenerate tiny test.
        let elapsed_ns = (elapsed.as_nanos() as u64).max(1);
        Sample { elapsed_ns, alloc_bytes: counts.bytes, alloc_count: counts.count }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_allocations_inside_a_mark() {
        let mark = Mark::start();
        let v: Vec<u8> = Vec::with_capacity(1000);
        std::hint::black_box(&v);
        let sample = mark.stop();
        // Tests run in parallel threads sharing the global counters: only lower bounds hold.
        assert!(sample.alloc_count >= 1);
        assert!(sample.alloc_bytes >= 1000);
        assert!(sample.elapsed_ns >= 1);
    }
}
