//! Tiers 3–4 of the micro suite: contended async primitives and task scheduling.
//!
//! Topology (BENCHMARKS.md): one multi-thread runtime per worker count of the sweep, built by
//! the selected variant (`variants::Variant::build_runtime`) outside any timing. Each benchmark runs as a *driver task* spawned onto that
//! runtime (`rt.block_on(async { tokio::spawn(driver).await })`), so the spawns it times are
//! worker-local. The driver runs warmup and measured iterations itself and takes the
//! timestamps: from before the first spawn to after the last join (`Mark::start` /
//! `Mark::stop`, which also bracket the allocation counters).
//!
//! Shapes, mirrored 1:1 by the Zig side (runtime/bench/async_tiers.zig):
//! - Shared objects (channel, lock, semaphore) are created once per benchmark before the
//!   first iteration; the handles each task needs (`Arc` or channel-handle clones) are made
//!   before `Mark::start` and moved into the tasks, and the join-handle vector is allocated
//!   with its final capacity before timing.
//! - Join handles are awaited one by one in spawn order.
//! - Results are verified after `Mark::stop`.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::runtime::Runtime;
use tokio::sync::{Mutex, RwLock, Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::alloc::{Mark, Sample};
use crate::constants::Constants;
use crate::harness::expect_eq;
use crate::sync_tiers::sum_below;

type Samples = Result<Vec<Sample>, String>;
/// What a benchmark task returns: a count or checksum, or what went wrong.
type TaskResult = Result<u64, &'static str>;

/// Runs `driver` as a task spawned from `block_on`, and returns its samples.
pub fn drive<F>(rt: &Runtime, driver: F) -> Samples
where
    F: Future<Output = Samples> + Send + 'static,
{
    rt.block_on(async move { tokio::spawn(driver).await })
        .map_err(|e| format!("driver task failed: {e}"))?
}

/// Awaits every handle in spawn order, pushing each task's result into `out` (capacity
/// reserved by the caller before timing, so this does not allocate).
async fn join_in_order(handles: &mut Vec<JoinHandle<TaskResult>>, out: &mut Vec<TaskResult>) -> Result<(), String> {
    for handle in handles.drain(..) {
        out.push(handle.await.map_err(|e| format!("task failed: {e}"))?);
    }
    Ok(())
}

/// Sums the task results, failing with the first task error.
fn total(results: &[TaskResult]) -> Result<u64, String> {
    let mut sum = 0;
    for result in results {
        sum += result.map_err(|e| e.to_string())?;
    }
    Ok(sum)
}

fn measured(k: u64, c: &Constants) -> bool {
    k >= c.warmup
}

// -- Tier 3 ---------------------------------------------------------------------------------

/// channel_mpmc: async-channel bounded(mpmc_buffer). Spawn order: `mpmc_producers` producers
/// (producer p sends p·per + j for j in 0..per, each send awaited, returns per), then
/// `mpmc_consumers` consumers (each awaits exactly async_ops / consumers receives and returns
/// the sum of what it got). Check: counts and the sum of all values 0..ops.
pub async fn channel_mpmc(c: Constants) -> Samples {
    let producers = c.mpmc_producers;
    let consumers = c.mpmc_consumers;
    let per_producer = c.async_ops / producers;
    let per_consumer = c.async_ops / consumers;
    let ops = producers * per_producer;
    let (tx, rx) = async_channel::bounded::<u64>(c.mpmc_buffer as usize);
    let mut handles = Vec::with_capacity((producers + consumers) as usize);
    let mut results = Vec::with_capacity((producers + consumers) as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut txs: Vec<_> = (0..producers).map(|_| tx.clone()).collect();
        let mut rxs: Vec<_> = (0..consumers).map(|_| rx.clone()).collect();
        results.clear();
        let mark = Mark::start();
        for (p, tx) in txs.drain(..).enumerate() {
            handles.push(tokio::spawn(async move {
                let base = p as u64 * per_producer;
                for j in 0..per_producer {
                    tx.send(base + j).await.map_err(|_| "send on a closed channel")?;
                }
                Ok(per_producer)
            }));
        }
        for rx in rxs.drain(..) {
            handles.push(tokio::spawn(async move {
                let mut sum = 0;
                for _ in 0..per_consumer {
                    sum += rx.recv().await.map_err(|_| "receive on a closed channel")?;
                }
                Ok(sum)
            }));
        }
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        let sent = total(&results[..producers as usize])?;
        let received_sum = total(&results[producers as usize..])?;
        expect_eq("values sent", sent, ops)?;
        expect_eq("sum of received values", received_sum, sum_below(ops))?;
        expect_eq("values left in the channel", rx.len(), 0)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// channel_mpsc: tokio mpsc bounded(mpmc_buffer). Spawn order: `mpsc_producers` producers
/// (as in channel_mpmc), then 1 consumer that awaits exactly ops receives, sums them and
/// hands the receiver back (it is `&mut`-only, so it travels into the task and back).
pub async fn channel_mpsc(c: Constants) -> Samples {
    let producers = c.mpsc_producers;
    let per_producer = c.async_ops / producers;
    let ops = producers * per_producer;
    let (tx, rx) = mpsc::channel::<u64>(c.mpmc_buffer as usize);
    let mut rx = Some(rx);
    let mut handles = Vec::with_capacity(producers as usize);
    let mut results = Vec::with_capacity(producers as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut txs: Vec<_> = (0..producers).map(|_| tx.clone()).collect();
        let mut consumer_rx = rx.take().ok_or("receiver lost")?;
        results.clear();
        let mark = Mark::start();
        for (p, tx) in txs.drain(..).enumerate() {
            handles.push(tokio::spawn(async move {
                let base = p as u64 * per_producer;
                for j in 0..per_producer {
                    tx.send(base + j).await.map_err(|_| "send on a closed channel")?;
                }
                Ok(per_producer)
            }));
        }
        let consumer = tokio::spawn(async move {
            let mut sum = 0;
            let mut count = 0;
            for _ in 0..ops {
                match consumer_rx.recv().await {
                    Some(v) => {
                        sum += v;
                        count += 1;
                    }
                    None => break,
                }
            }
            (consumer_rx, count, sum)
        });
        join_in_order(&mut handles, &mut results).await?;
        let (back, count, sum) = consumer.await.map_err(|e| format!("consumer task failed: {e}"))?;
        let sample = mark.stop();
        rx = Some(back);
        expect_eq("values sent", total(&results)?, ops)?;
        expect_eq("values received", count, ops)?;
        expect_eq("sum of received values", sum, sum_below(ops))?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// mutex_contended: tokio Mutex<u64>; `contended_mutex_tasks` tasks × (async_ops / tasks) ×
/// (lock().await, increment, unlock). Check: the counter equals ops exactly.
pub async fn mutex_contended(c: Constants) -> Samples {
    let tasks = c.contended_mutex_tasks;
    let per_task = c.async_ops / tasks;
    let ops = tasks * per_task;
    let lock = Arc::new(Mutex::new(0u64));
    let mut handles = Vec::with_capacity(tasks as usize);
    let mut results = Vec::with_capacity(tasks as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        *lock.try_lock().map_err(|_| "mutex held between iterations")? = 0;
        let mut locks: Vec<_> = (0..tasks).map(|_| Arc::clone(&lock)).collect();
        results.clear();
        let mark = Mark::start();
        for lock in locks.drain(..) {
            handles.push(tokio::spawn(async move {
                for _ in 0..per_task {
                    let mut guard = lock.lock().await;
                    *guard += 1;
                }
                Ok(per_task)
            }));
        }
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        expect_eq("lock acquisitions", total(&results)?, ops)?;
        expect_eq("shared counter", *lock.try_lock().map_err(|_| "mutex still held")?, ops)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// rwlock_contended: tokio RwLock<u64>. Spawn order: `rwlock_readers` readers, then
/// `rwlock_writers` writers, each doing `rwlock_ops_per_task` ops. Reader op: read().await,
/// read the value (it must never decrease: writers only increment), release. Writer op:
/// write().await, increment, release. Check: value = writers × per_task.
pub async fn rwlock_contended(c: Constants) -> Samples {
    let readers = c.rwlock_readers;
    let writers = c.rwlock_writers;
    let per_task = c.rwlock_ops_per_task;
    let lock = Arc::new(RwLock::new(0u64));
    let tasks = (readers + writers) as usize;
    let mut handles = Vec::with_capacity(tasks);
    let mut results = Vec::with_capacity(tasks);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        *lock.try_write().map_err(|_| "rwlock held between iterations")? = 0;
        let mut locks: Vec<_> = (0..tasks).map(|_| Arc::clone(&lock)).collect();
        results.clear();
        let mark = Mark::start();
        let mut locks_iter = locks.drain(..);
        for _ in 0..readers {
            let lock = locks_iter.next().ok_or("missing handle")?;
            handles.push(tokio::spawn(async move {
                let mut last = 0;
                for _ in 0..per_task {
                    let guard = lock.read().await;
                    let value = black_box(*guard);
                    drop(guard);
                    if value < last {
                        return Err("a reader saw the value decrease");
                    }
                    last = value;
                }
                Ok(per_task)
            }));
        }
        for _ in 0..writers {
            let lock = locks_iter.next().ok_or("missing handle")?;
            handles.push(tokio::spawn(async move {
                for _ in 0..per_task {
                    let mut guard = lock.write().await;
                    *guard += 1;
                }
                Ok(per_task)
            }));
        }
        drop(locks_iter);
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        expect_eq("lock acquisitions", total(&results)?, (readers + writers) * per_task)?;
        expect_eq("shared counter", *lock.try_read().map_err(|_| "rwlock still held")?, writers * per_task)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// The semaphore under test plus a concurrency check: `in_use` counts tasks inside the
/// permit-protected section. Relaxed suffices: each permit hand-over (drop → acquire) is a
/// release/acquire edge inside the semaphore, so a task's `fetch_sub` happens-before the next
/// holder's `fetch_add`, and RMWs on one atomic follow happens-before in modification order.
struct GuardedSemaphore {
    semaphore: Semaphore,
    in_use: AtomicU64,
    violations: AtomicU64,
}

/// semaphore_contended: Semaphore(contended_sem_permits); `contended_sem_tasks` tasks ×
/// (async_ops / tasks) × (acquire().await, check ≤ permits holders, release). Check: no
/// violation, every acquire done, all permits back.
pub async fn semaphore_contended(c: Constants) -> Samples {
    let tasks = c.contended_sem_tasks;
    let per_task = c.async_ops / tasks;
    let ops = tasks * per_task;
    let permits = c.contended_sem_permits;
    let shared = Arc::new(GuardedSemaphore {
        semaphore: Semaphore::new(permits as usize),
        in_use: AtomicU64::new(0),
        violations: AtomicU64::new(0),
    });
    let mut handles = Vec::with_capacity(tasks as usize);
    let mut results = Vec::with_capacity(tasks as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut clones: Vec<_> = (0..tasks).map(|_| Arc::clone(&shared)).collect();
        results.clear();
        let mark = Mark::start();
        for shared in clones.drain(..) {
            handles.push(tokio::spawn(async move {
                for _ in 0..per_task {
                    let permit = shared.semaphore.acquire().await.map_err(|_| "semaphore closed")?;
                    let holders = shared.in_use.fetch_add(1, Ordering::Relaxed) + 1;
                    if holders > permits {
                        shared.violations.fetch_add(1, Ordering::Relaxed);
                    }
                    shared.in_use.fetch_sub(1, Ordering::Relaxed);
                    drop(permit);
                }
                Ok(per_task)
            }));
        }
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        expect_eq("acquisitions", total(&results)?, ops)?;
        expect_eq("holders above the permit count", shared.violations.load(Ordering::Relaxed), 0)?;
        expect_eq("available permits", shared.semaphore.available_permits() as u64, permits)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

// -- Tier 4 ---------------------------------------------------------------------------------

/// task_spawn: task_ops × (spawn a task returning i, await its handle), serially.
pub async fn task_spawn(c: Constants) -> Samples {
    let ops = c.task_ops;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut matched = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let value = tokio::spawn(async move { i }).await.map_err(|e| format!("task failed: {e}"))?;
            if value == i {
                matched += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("join results", matched, ops)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// task_spawn_batch: (task_ops / spawn_batch_size) × (spawn spawn_batch_size tasks returning
/// their index, then await each handle in order).
pub async fn task_spawn_batch(c: Constants) -> Samples {
    let batch = c.spawn_batch_size;
    let batches = c.task_ops / batch;
    let ops = batches * batch;
    let mut handles = Vec::with_capacity(batch as usize);
    let mut results = Vec::with_capacity(batch as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut sum = 0;
        let mark = Mark::start();
        for b in 0..batches {
            for j in 0..batch {
                let index = b * batch + j;
                handles.push(tokio::spawn(async move { Ok(index) }));
            }
            results.clear();
            join_in_order(&mut handles, &mut results).await?;
            sum += total(&results)?;
        }
        let sample = mark.stop();
        expect_eq("sum of join results", sum, sum_below(ops))?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// blocking_spawn: task_ops × (spawn_blocking a closure returning i, await it), serially.
pub async fn blocking_spawn(c: Constants) -> Samples {
    let ops = c.task_ops;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut matched = 0;
        let mark = Mark::start();
        for i in 0..ops {
            let value = tokio::task::spawn_blocking(move || i)
                .await
                .map_err(|e| format!("blocking task failed: {e}"))?;
            if value == i {
                matched += 1;
            }
        }
        let sample = mark.stop();
        expect_eq("join results", matched, ops)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// yield_many: yield_tasks tasks × yield_per_task `yield_now().await` each (returning how
/// many times they suspended), then await each handle in order.
pub async fn yield_many(c: Constants) -> Samples {
    let tasks = c.yield_tasks;
    let per_task = c.yield_per_task;
    let mut handles = Vec::with_capacity(tasks as usize);
    let mut results = Vec::with_capacity(tasks as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        results.clear();
        let mark = Mark::start();
        for _ in 0..tasks {
            handles.push(tokio::spawn(async move {
                // Counts how many times the task really suspended (a yield that returned
                // Ready at once would not count), like the Zig side's Yielder.
                let mut suspended: u64 = 0;
                for _ in 0..per_task {
                    let mut yielding = std::pin::pin!(tokio::task::yield_now());
                    std::future::poll_fn(|cx| {
                        let poll = yielding.as_mut().poll(cx);
                        if poll.is_pending() {
                            suspended += 1;
                        }
                        poll
                    })
                    .await;
                }
                Ok(suspended)
            }));
        }
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        expect_eq("suspensions in yields", total(&results)?, tasks * per_task)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// ping_pong (shape of Tokio's benches/rt_multi_threaded.rs `ping_pong`): the driver spawns
/// ping_pong_rounds pinger tasks, then awaits their handles in order. Pinger i creates two
/// oneshots, spawns a ponger (awaits the first, replies value + 1 on the second), sends i,
/// awaits the reply, then awaits the ponger's handle and returns the reply. Check: reply of
/// pinger i is i + 1. (Tokio's bench detaches the ponger and signals the end through a
/// counter; here every task is joined so that the allocation counters are read after all of
/// the iteration's work, on both sides.)
pub async fn ping_pong(c: Constants) -> Samples {
    let rounds = c.ping_pong_rounds;
    let mut handles = Vec::with_capacity(rounds as usize);
    let mut results = Vec::with_capacity(rounds as usize);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        results.clear();
        let mark = Mark::start();
        for i in 0..rounds {
            handles.push(tokio::spawn(async move {
                let (ping_tx, ping_rx) = oneshot::channel::<u64>();
                let (pong_tx, pong_rx) = oneshot::channel::<u64>();
                let ponger = tokio::spawn(async move {
                    let value = ping_rx.await.map_err(|_| "ping sender dropped")?;
                    pong_tx.send(value + 1).map_err(|_| "pong receiver dropped")?;
                    Ok::<(), &'static str>(())
                });
                ping_tx.send(i).map_err(|_| "ping receiver dropped")?;
                let reply = pong_rx.await.map_err(|_| "pong sender dropped")?;
                ponger.await.map_err(|_| "ponger task failed")??;
                Ok(reply)
            }));
        }
        join_in_order(&mut handles, &mut results).await?;
        let sample = mark.stop();
        for (i, result) in results.iter().enumerate() {
            expect_eq("pong reply", (*result).map_err(|e| e.to_string())?, i as u64 + 1)?;
        }
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// One link of chained_spawn: with `remaining` links left, spawn the next task (its handle is
/// dropped: detached) or, at the end of the chain, report the chain's length.
fn chain_link(remaining: u64, depth: u64, done: oneshot::Sender<u64>) {
    if remaining == 0 {
        let _ = done.send(depth);
    } else {
        drop(tokio::spawn(async move { chain_link(remaining - 1, depth + 1, done) }));
    }
}

/// chained_spawn (shape of Tokio's `chained_spawn`): the driver spawns task 1; task k spawns
/// task k + 1 until chain_length tasks ran; the last sends its depth on a oneshot (created
/// before timing) that the driver awaits. Check: depth = chain_length.
pub async fn chained_spawn(c: Constants) -> Samples {
    let length = c.chain_length;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let (done_tx, done_rx) = oneshot::channel::<u64>();
        let mark = Mark::start();
        chain_link(length, 0, done_tx);
        let depth = done_rx.await.map_err(|_| "the chain ended without reporting".to_string())?;
        let sample = mark.stop();
        expect_eq("chain depth", depth, length)?;
        if measured(k, &c) {
            samples.push(sample);
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;

    type Driver = fn(Constants) -> Pin<Box<dyn Future<Output = Samples> + Send>>;

    fn tiny() -> Constants {
        let mut c = Constants::load("quick").unwrap();
        for set in ["warmup=1", "iterations=2", "async_ops=40", "task_ops=20", "rwlock_ops_per_task=10",
            "yield_tasks=4", "yield_per_task=5", "ping_pong_rounds=10", "chain_length=10", "mpmc_buffer=4",
            "num_workers=2"] {
            c.apply_override(set).unwrap();
        }
        c
    }

    #[test]
    fn every_async_benchmark_passes_its_check() {
        let c = tiny();
        let rt = crate::variants::select("tokio", "tokio").unwrap().build_runtime(c.num_workers).unwrap();
        let benches: [(&str, Driver); 11] = [
            ("channel_mpmc", |c| Box::pin(channel_mpmc(c))),
            ("channel_mpsc", |c| Box::pin(channel_mpsc(c))),
            ("mutex_contended", |c| Box::pin(mutex_contended(c))),
            ("rwlock_contended", |c| Box::pin(rwlock_contended(c))),
            ("semaphore_contended", |c| Box::pin(semaphore_contended(c))),
            ("task_spawn", |c| Box::pin(task_spawn(c))),
            ("task_spawn_batch", |c| Box::pin(task_spawn_batch(c))),
            ("blocking_spawn", |c| Box::pin(blocking_spawn(c))),
            ("yield_many", |c| Box::pin(yield_many(c))),
            ("ping_pong", |c| Box::pin(ping_pong(c))),
            ("chained_spawn", |c| Box::pin(chained_spawn(c))),
        ];
        for (name, bench) in benches {
            let samples = drive(&rt, bench(c.clone())).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(samples.len(), 2, "{name}");
        }
    }

    #[test]
    fn a_failed_task_is_reported() {
        assert_eq!(total(&[Ok(1), Ok(2)]).unwrap(), 3);
        assert_eq!(total(&[Ok(1), Err("lost a value")]).unwrap_err(), "lost a value");
    }

    #[test]
    fn a_panicking_driver_is_an_error() {
        let rt = crate::variants::select("tokio", "tokio").unwrap().build_runtime(1).unwrap();
        let err = drive(&rt, async { panic!("driver exploded") }).unwrap_err();
        assert!(err.contains("driver task failed"), "{err}");
    }
}
