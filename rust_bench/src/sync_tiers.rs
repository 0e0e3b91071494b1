//! Tiers 0–2 of the micro suite: single thread, no runtime.
//!
//! Each benchmark times `ops` operations as one iteration between `Mark::start` and
//! `Mark::stop`; objects the spec calls untimed are created before `Mark::start`, and the
//! result is verified after `Mark::stop`. The loop bodies are mirrored 1:1 by the Zig side
//! (runtime/bench/sync_tiers.zig); each function's comment states what one op is.
//! `black_box` keeps values the loop produces observable (Zig: `harness.blackBox`, at the same places).

use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use tokio::sync::{Barrier, Mutex, Notify, OnceCell, RwLock, Semaphore, broadcast, mpsc, oneshot, watch};

use crate::alloc::{Mark, Sample};
use crate::constants::Constants;
use crate::harness::{expect_eq, repeat};

type Samples = Result<Vec<Sample>, String>;

/// Sum of 0..n, the checksum of channel benchmarks that move the values 0..n.
pub fn sum_below(n: u64) -> u64 {
    if n == 0 { 0 } else { (n - 1) * n / 2 }
}

// -- Tier 0: controls -----------------------------------------------------------------------
//
// The op loops are not compiled by rustc: they are the functions of
// runtime/bench/controls_x86_64.s, the one assembly source the Zig side assembles too, so both
// programs run the same instructions at the same alignment. Each side calls them the same way:
// directly, between `Mark::start` and `Mark::stop`, on a word that has a cache line to itself.

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(include_str!("../../runtime/bench/controls_x86_64.s"), options(att_syntax));

#[cfg(not(target_arch = "x86_64"))]
compile_error!("the Tier 0 controls are x86-64 assembly (runtime/bench/controls_x86_64.s); port them");

unsafe extern "C" {
    /// `ops` × (CAS 0→1, store 0) on `word`; returns the successful CASes.
    fn ampere_bench_floor_cas_store(word: *const AtomicU32, ops: u64) -> u64;
    /// `ops` × fetch-add 1 on `counter`.
    fn ampere_bench_floor_fetch_add(counter: *const AtomicU64, ops: u64);
}

/// A value alone on its 64-byte cache line (Zig: `CacheLine(T)`, `align(64)`).
#[repr(align(64))]
struct CacheLine<T>(T);

/// One op: 32-bit CAS 0→1 (acquire; failure relaxed), then store 0 (release).
pub fn floor_cas_store(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let word = CacheLine(AtomicU32::new(0));
    repeat(c.warmup, c.iterations, |_| {
        let mark = Mark::start();
        // SAFETY: the word is a live AtomicU32 (atomic accesses only) for the whole call.
        let swapped = unsafe { ampere_bench_floor_cas_store(&word.0, ops) };
        let sample = mark.stop();
        // Counts successes, so that a loop that did not run fails the check.
        expect_eq("successful compare-and-swaps", swapped, ops)?;
        expect_eq("final word", word.0.load(Ordering::Relaxed), 0)?;
        Ok(sample)
    })
}

/// One op: 64-bit fetch_add(1, acq_rel).
pub fn floor_fetch_add(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let counter = CacheLine(AtomicU64::new(0));
    repeat(c.warmup, c.iterations, |_| {
        counter.0.store(0, Ordering::Relaxed);
        let mark = Mark::start();
        // SAFETY: the counter is a live AtomicU64 (atomic accesses only) for the whole call.
        unsafe { ampere_bench_floor_fetch_add(&counter.0, ops) };
        let sample = mark.stop();
        expect_eq("counter", counter.0.load(Ordering::Relaxed), ops)?;
        Ok(sample)
    })
}

// -- Tier 1: sync fast paths ----------------------------------------------------------------

/// One op: `try_lock()` (must succeed), drop the guard.
pub fn mutex(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let lock = Mutex::new(());
    repeat(c.warmup, c.iterations, |_| {
        let mut acquired: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Ok(guard) = black_box(&lock).try_lock() {
                acquired += 1;
                drop(guard);
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_lock calls", acquired, ops)?;
        Ok(sample)
    })
}

/// One op: `try_read()` (must succeed), drop the guard.
pub fn rwlock_read(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let lock = RwLock::new(());
    repeat(c.warmup, c.iterations, |_| {
        let mut acquired: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Ok(guard) = black_box(&lock).try_read() {
                acquired += 1;
                drop(guard);
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_read calls", acquired, ops)?;
        Ok(sample)
    })
}

/// One op: `try_write()` (must succeed), drop the guard.
pub fn rwlock_write(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let lock = RwLock::new(());
    repeat(c.warmup, c.iterations, |_| {
        let mut acquired: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Ok(guard) = black_box(&lock).try_write() {
                acquired += 1;
                drop(guard);
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_write calls", acquired, ops)?;
        Ok(sample)
    })
}

/// One op on a semaphore of `semaphore_permits` permits: `try_acquire()` one permit (must
/// succeed), drop the permit (releases 1).
pub fn semaphore(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let permits = c.semaphore_permits as usize;
    let sem = Semaphore::new(permits);
    repeat(c.warmup, c.iterations, |_| {
        let mut acquired: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Ok(permit) = black_box(&sem).try_acquire() {
                acquired += 1;
                drop(permit);
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_acquire calls", acquired, ops)?;
        expect_eq("available permits", sem.available_permits(), permits)?;
        Ok(sample)
    })
}

/// One op: `get()` on a cell holding 42; the values read are summed.
pub fn oncecell_get(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let cell: OnceCell<u64> = OnceCell::new();
    cell.set(42).map_err(|_| "could not initialise the cell".to_string())?;
    repeat(c.warmup, c.iterations, |_| {
        let mut sum: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Some(value) = black_box(&cell).get() {
                sum += *value;
            }
        }
        let sample = mark.stop();
        expect_eq("sum of get() values", sum, 42 * ops)?;
        Ok(sample)
    })
}

/// One op: create a new cell, `set(i)` (must succeed); the cell is kept observable.
pub fn oncecell_set(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    repeat(c.warmup, c.iterations, |_| {
        let mut stored: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let cell: OnceCell<u64> = OnceCell::new();
            if cell.set(i).is_ok() {
                stored += 1;
            }
            black_box(&cell);
        }
        let sample = mark.stop();
        expect_eq("successful set() calls", stored, ops)?;
        Ok(sample)
    })
}

/// One op: `notify_one()`, then create the `notified()` future, poll it once with a no-op
/// waker: it must be Ready (it consumes the stored permit).
pub fn notify(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let notify = Notify::new();
    let mut cx = Context::from_waker(Waker::noop());
    repeat(c.warmup, c.iterations, |_| {
        let mut ready: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            let n = black_box(&notify);
            n.notify_one();
            let notified = pin!(n.notified());
            if notified.poll(&mut cx).is_ready() {
                ready += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("Ready polls of notified()", ready, ops)?;
        Ok(sample)
    })
}

/// One op on a barrier of 1 (created once, untimed): create its `wait()` future, poll it once
/// with a no-op waker: it must be Ready (and this task the leader).
pub fn barrier(c: &Constants) -> Samples {
    let ops = c.sync_ops;
    let barrier = Barrier::new(1);
    let mut cx = Context::from_waker(Waker::noop());
    repeat(c.warmup, c.iterations, |_| {
        let mut ready: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            let wait = pin!(black_box(&barrier).wait());
            if let Poll::Ready(result) = wait.poll(&mut cx) {
                if result.is_leader() {
                    ready += 1;
                }
            }
        }
        let sample = mark.stop();
        expect_eq("Ready (leader) polls of wait()", ready, ops)?;
        Ok(sample)
    })
}

// -- Tier 2: channel fast paths -------------------------------------------------------------

/// One op: `try_send(i)` on a bounded mpsc of capacity `channel_ops` (created untimed per
/// iteration, receiver alive). Verified untimed by draining: every value, in order.
pub fn channel_send(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    repeat(c.warmup, c.iterations, |_| {
        let (tx, mut rx) = mpsc::channel::<u64>(ops as usize);
        let mut sent: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            if black_box(&tx).try_send(i).is_ok() {
                sent += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_send calls", sent, ops)?;
        let mut sum = 0;
        let mut received = 0;
        while let Ok(v) = rx.try_recv() {
            sum += v;
            received += 1;
        }
        expect_eq("values in the channel", received, ops)?;
        expect_eq("sum of values in the channel", sum, sum_below(ops))?;
        Ok(sample)
    })
}

/// One op: `try_recv()` on a bounded mpsc pre-filled untimed with 0..channel_ops; the values
/// are summed.
pub fn channel_recv(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    repeat(c.warmup, c.iterations, |_| {
        let (tx, mut rx) = mpsc::channel::<u64>(ops as usize);
        for i in 0..ops {
            tx.try_send(i).map_err(|e| format!("pre-fill failed: {e}"))?;
        }
        let mut sum: u64 = 0;
        let mut received: u64 = 0;
        let mark = Mark::start();
        for _ in 0..ops {
            if let Ok(v) = black_box(&mut rx).try_recv() {
                sum += v;
                received += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("successful try_recv calls", received, ops)?;
        expect_eq("sum of received values", sum, sum_below(ops))?;
        drop(tx);
        Ok(sample)
    })
}

/// One op on a bounded mpsc of capacity 1 (created untimed): `try_send(i)`, `try_recv()`
/// which must return i.
pub fn channel_roundtrip(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    repeat(c.warmup, c.iterations, |_| {
        let (tx, mut rx) = mpsc::channel::<u64>(1);
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let _ = black_box(&tx).try_send(i);
            if let Ok(v) = black_box(&mut rx).try_recv() {
                if v == i {
                    matched += 1;
                }
            }
        }
        let sample = mark.stop();
        expect_eq("values received back in order", matched, ops)?;
        Ok(sample)
    })
}

/// One op: create a oneshot, `send(i)`, `try_recv()` which must return i.
pub fn oneshot(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    repeat(c.warmup, c.iterations, |_| {
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let (tx, mut rx) = oneshot::channel::<u64>();
            let _ = tx.send(i);
            if let Ok(v) = black_box(&mut rx).try_recv() {
                if v == i {
                    matched += 1;
                }
            }
        }
        let sample = mark.stop();
        expect_eq("oneshot values received", matched, ops)?;
        Ok(sample)
    })
}

/// oneshot_owned: Tokio's oneshot already has owned halves (an `Arc`'d state, one allocation
/// per channel), so the op is oneshot's; the ampere side uses `OwnedOneshot`.
pub fn oneshot_owned(c: &Constants) -> Samples {
    oneshot(c)
}

/// One op on a broadcast channel of capacity `broadcast_capacity` with `broadcast_receivers`
/// receivers (created untimed): one `send(i)`, then one `try_recv()` on each receiver, each
/// of which must return i.
pub fn broadcast(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    let receivers = c.broadcast_receivers;
    if receivers == 0 {
        return Err("broadcast_receivers = 0, at least 1 needed".to_string());
    }
    let (tx, first) = broadcast::channel::<u64>(c.broadcast_capacity as usize);
    let mut rxs: Vec<broadcast::Receiver<u64>> = (1..receivers).map(|_| tx.subscribe()).collect();
    rxs.push(first);
    repeat(c.warmup, c.iterations, |_| {
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let _ = black_box(&tx).send(i);
            for rx in rxs.iter_mut() {
                if let Ok(v) = rx.try_recv() {
                    if v == i {
                        matched += 1;
                    }
                }
            }
        }
        let sample = mark.stop();
        expect_eq("values received by all receivers", matched, ops * receivers)?;
        Ok(sample)
    })
}

/// One op with one receiver (created untimed): `send(i)`, then read the latest value with
/// `borrow_and_update()`, which must be i.
pub fn watch(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    let (tx, mut rx) = watch::channel::<u64>(u64::MAX);
    repeat(c.warmup, c.iterations, |_| {
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let _ = black_box(&tx).send(i);
            if *black_box(&mut rx).borrow_and_update() == i {
                matched += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("latest values seen", matched, ops)?;
        Ok(sample)
    })
}

/// Bytes of the payload of `watch_rc` and `broadcast_rc`: a reference-counted buffer
/// (`Arc<[u8]>` here, `RcBuffer` on the Zig side), cloned once per send and once per receiver
/// that reads it.
pub const RC_PAYLOAD_BYTES: usize = 64;

/// The two prebuilt payloads of the `_rc` rows: buffer j holds `RC_PAYLOAD_BYTES` bytes of
/// value j + 1; op i sends buffer i mod 2, so a stale value fails the check.
fn rc_payloads() -> [Arc<[u8]>; 2] {
    [Arc::from(vec![1u8; RC_PAYLOAD_BYTES]), Arc::from(vec![2u8; RC_PAYLOAD_BYTES])]
}

/// Pointer identity and the first byte (read through the pointer, as Zig's `bytes()[0]`).
fn rc_matches(got: &Arc<[u8]>, want: &Arc<[u8]>, i: u64) -> bool {
    Arc::ptr_eq(got, want) && got[0] == (i & 1) as u8 + 1
}

/// Like `watch`, with a 64-byte `Arc<[u8]>` payload: one op is `send(clone of buffer i mod
/// 2)` (the channel drops the value it replaces), then `borrow_and_update().clone()` (the
/// receiver's own clone), which must be that buffer, dropped at once. After the loop each
/// buffer has exactly the references it should: ours, plus the channel's on the last one sent.
pub fn watch_rc(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    let payloads = rc_payloads();
    let (tx, mut rx) = watch::channel::<Arc<[u8]>>(Arc::clone(&payloads[1]));
    repeat(c.warmup, c.iterations, |_| {
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let want = &payloads[(i & 1) as usize];
            let _ = black_box(&tx).send(Arc::clone(want));
            let got = black_box(&mut rx).borrow_and_update().clone();
            if rc_matches(&got, want, i) {
                matched += 1;
            }
            drop(got);
        }
        let sample = mark.stop();
        expect_eq("latest values seen", matched, ops)?;
        expect_eq("references to the last buffer sent", Arc::strong_count(&payloads[(ops.wrapping_sub(1) & 1) as usize]), 2)?;
        expect_eq("references to the other buffer", Arc::strong_count(&payloads[(ops & 1) as usize]), 1)?;
        Ok(sample)
    })
}

/// Like `broadcast`, with a 64-byte `Arc<[u8]>` payload: one op is `send(clone of buffer i
/// mod 2)`, then `try_recv()` on each receiver, each the receiver's own clone, which must be
/// that buffer and is dropped at once. After the loop every value was read by every receiver,
/// so the channel holds no reference (it drops a value once its last receiver has read it):
/// each buffer has only ours.
pub fn broadcast_rc(c: &Constants) -> Samples {
    let ops = c.channel_ops;
    let receivers = c.broadcast_receivers;
    if receivers == 0 {
        return Err("broadcast_receivers = 0, at least 1 needed".to_string());
    }
    let payloads = rc_payloads();
    let (tx, first) = broadcast::channel::<Arc<[u8]>>(c.broadcast_capacity as usize);
    let mut rxs: Vec<broadcast::Receiver<Arc<[u8]>>> = vec![first];
    rxs.extend((1..receivers).map(|_| tx.subscribe()));
    repeat(c.warmup, c.iterations, |_| {
        let mut matched: u64 = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let want = &payloads[(i & 1) as usize];
            let _ = black_box(&tx).send(Arc::clone(want));
            for rx in rxs.iter_mut() {
                if let Ok(got) = rx.try_recv() {
                    if rc_matches(&got, want, i) {
                        matched += 1;
                    }
                }
            }
        }
        let sample = mark.stop();
        expect_eq("values received by all receivers", matched, ops * receivers)?;
        expect_eq("references to buffer 1", Arc::strong_count(&payloads[0]), 1)?;
        expect_eq("references to buffer 2", Arc::strong_count(&payloads[1]), 1)?;
        Ok(sample)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Constants {
        let mut c = Constants::load("quick").unwrap();
        c.apply_override("warmup=1").unwrap();
        c.apply_override("iterations=2").unwrap();
        c.apply_override("sync_ops=100").unwrap();
        c.apply_override("channel_ops=50").unwrap();
        c
    }

    #[test]
    fn every_sync_benchmark_passes_its_check() {
        let c = tiny();
        let benches: [(&str, fn(&Constants) -> Samples); 19] = [
            ("floor_cas_store", floor_cas_store), ("floor_fetch_add", floor_fetch_add),
            ("mutex", mutex), ("rwlock_read", rwlock_read), ("rwlock_write", rwlock_write),
            ("semaphore", semaphore), ("oncecell_get", oncecell_get), ("oncecell_set", oncecell_set),
            ("notify", notify), ("barrier", barrier), ("channel_send", channel_send),
            ("channel_recv", channel_recv), ("channel_roundtrip", channel_roundtrip),
            ("oneshot", oneshot), ("oneshot_owned", oneshot_owned), ("broadcast", broadcast), ("watch", watch),
            ("watch_rc", watch_rc), ("broadcast_rc", broadcast_rc),
        ];
        for (name, bench) in benches {
            let samples = bench(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(samples.len(), 2, "{name}");
            assert!(samples.iter().all(|s| s.elapsed_ns > 0), "{name}");
        }
    }

    #[test]
    fn sum_below_matches_a_loop() {
        assert_eq!(sum_below(0), 0);
        assert_eq!(sum_below(1), 0);
        assert_eq!(sum_below(5), 10);
    }
}
