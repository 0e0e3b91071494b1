//! Allocation counting: a `#[global_allocator]` wrapper around `System` (glibc malloc).
//!
//! Counted exactly like the Zig side's CountingAllocator: each allocation (`alloc`,
//! `alloc_zeroed`: +1 count, +size bytes) and each growing `realloc` (+1, +new size); frees
//! and shrinking reallocations are not counted.
//!
//! Counting per thread (issue 43): process-wide counters taxed only the side that allocates
//! (one load and two contended `fetch_add`s per allocation: Tokio paid 1.03–1.07×). Each thread
//! claims a `Slot` (a cache line) on its first counted allocation (one `fetch_add` on `NEXT`)
//! and caches it in a const-initialised thread-local (no destructor, no allocation: safe inside
//! the allocator); from then on it adds with a plain load and store (`Relaxed`: no other thread
//! writes its slot). Threads beyond `SLOTS` share `OVERFLOW` with atomic adds, so nothing is
//! lost. `reset` takes a baseline (the sum of every claimed slot) and `read` returns the sum
//! minus it; the measuring thread resets right before an iteration and reads right after, once
//! every task of the iteration has been joined: the join (JoinHandle completion, oneshot
//! receive) orders the workers' stores before its loads. The sums run outside the wall-clock and
//! the CPU-clock regions (`Mark`). The Zig side does the same (runtime/src/CountingAllocator.zig).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Threads with a slot of their own (the Zig side's `max_threads`); later ones share `OVERFLOW`.
pub const SLOTS: usize = 64;

/// One thread's counters, written only by its owner (except `OVERFLOW`'s: atomic adds).
#[repr(align(128))]
struct Slot {
    bytes: AtomicU64,
    count: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot { bytes: AtomicU64::new(0), count: AtomicU64::new(0) }
    }
}

static SLOT_TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static OVERFLOW: Slot = Slot::new();
/// Slots handed out (may exceed SLOTS: those threads use OVERFLOW).
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// The baseline `read` subtracts (written and read by the measuring thread).
static BASE_BYTES: AtomicU64 = AtomicU64::new(0);
static BASE_COUNT: AtomicU64 = AtomicU64::new(0);
/// Whether allocations are counted (on, except in `http-server`, which records no allocations).
static COUNTING: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// This thread's slot, null until its first counted allocation.
    static MINE: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Switches counting on or off for the rest of the process.
pub fn set_counting(on: bool) {
    COUNTING.store(on, Ordering::Relaxed);
}

pub struct CountingAlloc;

/// The calling thread's slot (claimed on first use).
#[inline]
fn slot() -> &'static Slot {
    MINE.try_with(|mine| {
        let cached = mine.get();
        if !cached.is_null() {
            // SAFETY: the pointer was taken from SLOT_TABLE or OVERFLOW, both 'static.
            return unsafe { &*cached };
        }
        let index = NEXT.fetch_add(1, Ordering::Relaxed);
        let claimed: &'static Slot = if index < SLOTS { &SLOT_TABLE[index] } else { &OVERFLOW };
        mine.set(claimed);
        claimed
    })
    .unwrap_or(&OVERFLOW)
}

#[inline]
fn record(size: usize) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let slot = slot();
    if std::ptr::eq(slot, &OVERFLOW) {
        slot.bytes.fetch_add(size as u64, Ordering::Relaxed);
        slot.count.fetch_add(1, Ordering::Relaxed);
    } else {
        // Only this thread writes its slot: a plain load and store, no read-modify-write.
        slot.bytes.store(slot.bytes.load(Ordering::Relaxed).wrapping_add(size as u64), Ordering::Relaxed);
        slot.count.store(slot.count.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
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

/// The sum of every claimed slot and the overflow slot.
fn totals() -> Counts {
    let claimed = NEXT.load(Ordering::Relaxed).min(SLOTS);
    let mut bytes = OVERFLOW.bytes.load(Ordering::Relaxed);
    let mut count = OVERFLOW.count.load(Ordering::Relaxed);
    for slot in &SLOT_TABLE[..claimed] {
        bytes = bytes.wrapping_add(slot.bytes.load(Ordering::Relaxed));
        count = count.wrapping_add(slot.count.load(Ordering::Relaxed));
    }
    Counts { bytes, count }
}

/// Starts a new count: `read` is measured from now.
pub fn reset() {
    let now = totals();
    BASE_BYTES.store(now.bytes, Ordering::Relaxed);
    BASE_COUNT.store(now.count, Ordering::Relaxed);
}

/// Allocations of every thread since the last `reset`.
pub fn read() -> Counts {
    let now = totals();
    Counts {
        bytes: now.bytes.wrapping_sub(BASE_BYTES.load(Ordering::Relaxed)),
        count: now.count.wrapping_sub(BASE_COUNT.load(Ordering::Relaxed)),
    }
}

/// One measured iteration (or echo batch): wall time, process CPU time and allocations
/// during it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    pub elapsed_ns: u64,
    /// Process CPU time (user + system, all threads) consumed during the iteration.
    pub cpu_ns: u64,
    pub alloc_bytes: u64,
    pub alloc_count: u64,
    /// The readings that bracket the sample (`Mark`): the monotonic clock (nanoseconds since
    /// a per-process origin, `origin()`) and the process CPU clock at the start and at the
    /// stop. `Span` joins the first sample's start to the last one's stop. Zero in samples not
    /// made by a `Mark` (unit tests).
    pub start_ns: u64,
    pub start_cpu_ns: u64,
    pub stop_ns: u64,
    pub stop_cpu_ns: u64,
}

/// The whole measured part of one case in one invocation: from the first measured sample's
/// start to the last one's stop, the gaps between samples included (untimed set-up, checks, a
/// worker spinning on after the last join), with the process CPU time (all threads) over that
/// span and the operations of its samples. The `<runtime>.span.csv` row of the case (the Zig
/// side's `harness.Span`; data/README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub iterations: u64,
    pub ops: u64,
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
}

impl Span {
    /// The span of `samples` (in the order they were measured), each of `ops_per_sample` ops.
    pub fn of(samples: &[Sample], ops_per_sample: u64) -> Span {
        let (first, last) = (samples.first().expect("a span of no samples"), samples.last().unwrap());
        assert!(last.stop_ns >= first.start_ns, "samples out of order");
        Span {
            iterations: samples.len() as u64,
            ops: samples.len() as u64 * ops_per_sample,
            // Clamped to 1 like a sample's elapsed_ns; CPU saturating like `Mark::stop`.
            elapsed_ns: (last.stop_ns - first.start_ns).max(1),
            cpu_ns: last.stop_cpu_ns.saturating_sub(first.start_cpu_ns),
        }
    }
}

/// The origin of the samples' monotonic stamps: the first `Mark::start` of the process.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("process_cpu_ns declares glibc's clock_gettime for 64-bit Linux only");

/// glibc's `struct timespec` on 64-bit Linux.
#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

unsafe extern "C" {
    /// glibc's `clock_gettime` (Rust's std links glibc; there is no `libc` crate here).
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

/// `CLOCK_PROCESS_CPUTIME_ID` of linux/time.h.
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;

/// CLOCK_PROCESS_CPUTIME_ID in nanoseconds: CPU time (user + system) of every thread of the
/// process, living and exited — the clock the Zig side's `processCpuNs` reads, through the
/// same glibc function (a system call: the vDSO serves only the wall clocks). Rust's std has
/// no process CPU clock.
#[inline]
pub fn process_cpu_ns() -> u64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux defines.
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_PROCESS_CPUTIME_ID is unavailable");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The start of a timed region. The same bracket as the Zig side's `Mark`, with the reads in
/// the same order:
///
/// ```text
/// start: reset the allocation counters → read CLOCK_PROCESS_CPUTIME_ID → read CLOCK_MONOTONIC (Instant)
/// ... the timed region ...
/// stop:  read CLOCK_MONOTONIC → read CLOCK_PROCESS_CPUTIME_ID → read the allocation counters
/// ```
///
/// The wall-clock region nests inside the CPU-clock region, so the CPU clock's system calls
/// stay out of the wall time (runtime/bench/README.md, "CPU time").
pub struct Mark {
    started_cpu_ns: u64,
    started: Instant,
}

impl Mark {
    #[inline]
    pub fn start() -> Mark {
        // The stamps' origin exists before the bracket (set on the process's first mark).
        let _ = origin();
        reset();
        let started_cpu_ns = process_cpu_ns();
        Mark { started_cpu_ns, started: Instant::now() }
    }

    #[inline]
    pub fn stop(self) -> Sample {
        let now = Instant::now();
        let elapsed = now.duration_since(self.started);
        let now_cpu_ns = process_cpu_ns();
        let counts = read();
        // A zero-length sample is impossible on a monotonic clock with real work; clamp to 1
        // so that the CSV contract (elapsed_ns > 0) holds even for a degenerate tiny test.
        let elapsed_ns = (elapsed.as_nanos() as u64).max(1);
        // The process CPU clock never goes back (exited threads' time stays in the sum);
        // saturating all the same, like the Zig side.
        let cpu_ns = now_cpu_ns.saturating_sub(self.started_cpu_ns);
        let base = origin();
        Sample {
            elapsed_ns,
            cpu_ns,
            alloc_bytes: counts.bytes,
            alloc_count: counts.count,
            start_ns: self.started.duration_since(base).as_nanos() as u64,
            start_cpu_ns: self.started_cpu_ns,
            stop_ns: now.duration_since(base).as_nanos() as u64,
            stop_cpu_ns: now_cpu_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_runs_from_the_first_start_to_the_last_stop_gaps_included() {
        let first = Sample { elapsed_ns: 10, cpu_ns: 8, start_ns: 1000, start_cpu_ns: 500, stop_ns: 1010, stop_cpu_ns: 508, ..Default::default() };
        let second = Sample { elapsed_ns: 20, cpu_ns: 30, start_ns: 1100, start_cpu_ns: 600, stop_ns: 1120, stop_cpu_ns: 630, ..Default::default() };
        let span = Span::of(&[first, second], 7);
        assert_eq!(span, Span { iterations: 2, ops: 14, elapsed_ns: 120, cpu_ns: 130 });
        let a = Mark::start().stop();
        let b = Mark::start().stop();
        assert!(b.start_ns >= a.stop_ns && b.start_cpu_ns >= a.stop_cpu_ns);
        assert!(Span::of(&[a, b], 1).elapsed_ns >= a.elapsed_ns + b.elapsed_ns);
    }

    #[test]
    fn every_threads_allocations_are_summed_after_the_join() {
        // Other tests run in parallel threads: only lower bounds hold for the totals, so the
        // exact check is on the slots of the threads spawned here.
        let before = totals();
        let handles: Vec<_> = (0..(SLOTS + 4))
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..10 {
                        std::hint::black_box(Vec::<u8>::with_capacity(32));
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let after = totals();
        assert!(after.count - before.count >= 10 * (SLOTS as u64 + 4), "{before:?} {after:?}");
        assert!(after.bytes - before.bytes >= 320 * (SLOTS as u64 + 4));
        assert!(NEXT.load(Ordering::Relaxed) > SLOTS, "the later threads share the overflow slot");
    }

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

    fn busy_for(ms: u64) {
        let until = Instant::now() + std::time::Duration::from_millis(ms);
        let mut spins = 0u64;
        while Instant::now() < until {
            spins += 1;
        }
        std::hint::black_box(spins);
    }

    #[test]
    fn a_busy_iteration_has_cpu_time() {
        let mark = Mark::start();
        busy_for(2);
        let sample = mark.stop();
        assert!(sample.cpu_ns > 0);
        assert!(sample.elapsed_ns >= 2_000_000);
        // Not asserted tighter than this: a preempted thread burns less CPU than wall time.
        assert!(sample.cpu_ns >= 100_000, "{sample:?}");
    }

    #[test]
    fn the_cpu_clock_is_process_wide() {
        let mark = Mark::start();
        // This thread sleeps in join: nearly all CPU time is the other thread's.
        std::thread::spawn(|| busy_for(20)).join().unwrap();
        let sample = mark.stop();
        assert!(sample.cpu_ns >= 2_000_000, "{sample:?}");
    }
}
