//! The io suite's Tokio twins (runtime/bench/io_benches.zig is the `std.Io` side; the fairness
//! table of runtime/bench/README.md, "Io suite", says what differs).
//!
//! Topology: the multi-thread runtime with the case's worker count (the worker sweep, a fresh
//! runtime per count, shared with Tiers 3–4), driven from a driver task (`rt.block_on(async {
//! tokio::spawn(driver).await })`), as the Zig side runs its driver with `io.concurrent`. Each
//! iteration is timed from before the first spawn to after the last task is joined, and
//! checked after the timed region:
//! - io_mutex_contended(tasks): `tasks` tasks × async_ops/tasks × (`tokio::sync::Mutex` lock,
//!   increment, unlock);
//! - io_queue_pingpong(pairs): `pairs` pairs of tasks, one bounded `mpsc` channel of capacity 1
//!   each way per pair; a round trip = a value there and back; ping_pong_rounds split over the pairs;
//! - io_fan_in / io_fan_out: io_fan_tasks producers and one consumer, or one producer and
//!   io_fan_tasks consumers, on one channel of io_queue_capacity: fan-in a bounded `mpsc`,
//!   fan-out `async-channel` (Tokio's mpsc has a single receiver; `std.Io.Queue` is MPMC);
//! - io_spawn: task_ops × (`tokio::spawn` of a task returning its argument, await it);
//! - io_spawn_group(n): n tasks in the group, then join them all;
//! - io_sleep(d_ms): io_sleep_tasks tasks each `tokio::time::sleep(d)` once, all joined;
//! - io_tcp_pingpong / io_tcp_echo_conns / io_tcp_connect: as the net suite's rows
//!   (analysis of net.rs), with io_net_rounds round trips and io_connect_ops connections; the
//!   echo server accepts in a loop until the driver stops it (a flag and one more connection),
//!   as on the Zig side.
//!
//! Collecting the tasks (`Group`, the variant setting `io_group`): where the Zig sides put tasks
//! in an `Io.Group` (the std.Io program) or await every `JoinHandle` in spawn order (ampere's
//! native API), the twin collects them with a `Vec<JoinHandle>` awaited in spawn order (`tokio`,
//! `io_group` 0: the same shape as native ampere and the micro suite; the headline's baseline), a
//! `JoinSet` (`tokio.joinset`, 1: one more allocation and its bookkeeping per task, results in
//! completion order) or a `tokio_util::task::TaskTracker` (`tokio.tracker`, 2: close, then wait
//! for every task, no results — the closest to `Io.Group`; a task's error goes to a failure slot
//! the driver reads after the wait, like the Zig side's `Failures`). io_tcp_echo_conns collects
//! its client tasks in a `Vec<JoinHandle>` in every variant: each task hands its connection back.
//! Everything a task needs that the Zig sides build before the start mark is built before it
//! here too (io_queue_pingpong's channels, the group's handle vector).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::{Mutex, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::task::TaskTracker;

use crate::alloc::{Mark, Sample};
use crate::constants::Constants;
use crate::harness::{Case, expect_eq};

type Samples = Result<Vec<Sample>, String>;

/// The parameters of the suite (BENCHMARKS.md, "Io suite"); the same in io_benches.zig.
pub const QUEUE_PAIRS: [u64; 2] = [1, 100];
pub const SLEEP_MS: [u64; 2] = [0, 10];
pub const PINGPONG_SIZES: [u64; 2] = [64, 4096];
pub const ECHO_CONNS: [u64; 2] = [16, 128];
/// Payload of one io_tcp_echo_conns round trip.
pub const CONNS_PAYLOAD_BYTES: usize = 64;
/// The echo server's read buffer, per connection (both sides).
pub const SERVER_BUFFER_BYTES: usize = 64 * 1024;

/// Round trips per pair of io_queue_pingpong: ping_pong_rounds split over the pairs.
pub fn pingpong_rounds(rounds: u64, pairs: u64) -> u64 {
    (rounds / pairs).max(1)
}

/// Items per iteration of io_fan_in / io_fan_out: io_fan_items rounded down to a multiple of the tasks.
pub fn fan_items(items: u64, tasks: u64) -> u64 {
    tasks * (items / tasks)
}

/// The io cases of benchmark `name` (canonical order; the same on the Zig side).
pub fn cases(name: &'static str, c: &Constants) -> Vec<Case> {
    let one = |param: &str, value: u64, ops: u64| vec![Case::io(name, param, value, ops)];
    match name {
        "io_mutex_contended" => one("tasks", c.io_mutex_tasks, c.io_mutex_tasks * (c.async_ops / c.io_mutex_tasks)),
        "io_queue_pingpong" => QUEUE_PAIRS
            .iter()
            .map(|&pairs| Case::io(name, "pairs", pairs, pairs * pingpong_rounds(c.ping_pong_rounds, pairs)))
            .collect(),
        "io_fan_in" => one("producers", c.io_fan_tasks, fan_items(c.io_fan_items, c.io_fan_tasks)),
        "io_fan_out" => one("consumers", c.io_fan_tasks, fan_items(c.io_fan_items, c.io_fan_tasks)),
        "io_spawn" => one("", 0, c.task_ops),
        "io_spawn_group" => one("n", c.io_group_tasks, c.io_group_tasks),
        "io_sleep" => SLEEP_MS.iter().map(|&ms| Case::io(name, "d_ms", ms, c.io_sleep_tasks)).collect(),
        "io_tcp_pingpong" => PINGPONG_SIZES.iter().map(|&size| Case::io(name, "size", size, c.io_net_rounds)).collect(),
        "io_tcp_echo_conns" => ECHO_CONNS.iter().map(|&conns| Case::io(name, "conns", conns, conns * c.io_net_rounds)).collect(),
        "io_tcp_connect" => one("", 0, c.io_connect_ops),
        other => panic!("not an io benchmark: {other}"),
    }
}

/// How the twins collect a group of tasks (the variant setting `io_group`; module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// `Vec<JoinHandle>`, every handle awaited in spawn order (`io_group` 0, the default).
    Handles,
    /// `JoinSet`, joined in completion order (`io_group` 1).
    JoinSet,
    /// `tokio_util::task::TaskTracker`: close, then wait (`io_group` 2).
    Tracker,
}

impl GroupKind {
    /// The kind of the setting's value (range-checked at load: 0 to 2).
    pub fn of(setting: Option<u64>) -> GroupKind {
        match setting.unwrap_or(0) {
            0 => GroupKind::Handles,
            1 => GroupKind::JoinSet,
            2 => GroupKind::Tracker,
            other => unreachable!("io_group {other} out of range"),
        }
    }
}

type TaskResult = Result<(), String>;

/// The first failure of a task in a `TaskTracker` group (which keeps no results): written by the
/// failing task, taken by the driver after `wait` (the wait orders the write before the read).
/// One benchmark runs at a time in this program.
static TRACKED_FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The tasks of one iteration, collected as `GroupKind` says. Built once per benchmark, before
/// any timed region (the handle vector's capacity, the tracker), and reused by every iteration.
pub struct Group {
    kind: GroupKind,
    handles: Vec<JoinHandle<TaskResult>>,
    set: JoinSet<TaskResult>,
    tracker: TaskTracker,
}

impl Group {
    pub fn new(kind: GroupKind, tasks: u64) -> Group {
        let capacity = if kind == GroupKind::Handles { tasks as usize } else { 0 };
        Group { kind, handles: Vec::with_capacity(capacity), set: JoinSet::new(), tracker: TaskTracker::new() }
    }

    pub fn spawn<F>(&mut self, task: F)
    where
        F: Future<Output = TaskResult> + Send + 'static,
    {
        match self.kind {
            GroupKind::Handles => self.handles.push(tokio::spawn(task)),
            GroupKind::JoinSet => {
                self.set.spawn(task);
            }
            GroupKind::Tracker => {
                // The returned handle is dropped (detached); the tracker waits for the task.
                drop(self.tracker.spawn(async move {
                    if let Err(message) = task.await {
                        TRACKED_FAILURE.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(message);
                    }
                }));
            }
        }
    }

    /// Waits for every task spawned since the last join; the first failure is the benchmark's.
    pub async fn join(&mut self) -> TaskResult {
        match self.kind {
            GroupKind::Handles => {
                let mut first: Option<String> = None;
                for handle in self.handles.drain(..) {
                    let outcome = handle.await.map_err(|e| format!("task failed: {e}")).and_then(|r| r);
                    if let (Err(message), None) = (outcome, &first) {
                        first = Some(message);
                    }
                }
                first.map_or(Ok(()), Err)
            }
            GroupKind::JoinSet => join_all(&mut self.set).await,
            GroupKind::Tracker => {
                self.tracker.close();
                self.tracker.wait().await;
                self.tracker.reopen();
                TRACKED_FAILURE.lock().unwrap_or_else(|e| e.into_inner()).take().map_or(Ok(()), Err)
            }
        }
    }
}

/// Runs the io case `case` as a driver task on `rt`, collecting groups of tasks as `group` says.
pub fn run_case(rt: &Runtime, case: &Case, c: &Constants, group: GroupKind) -> Samples {
    let c = c.clone();
    let driver: Pin<Box<dyn Future<Output = Samples> + Send>> = match case.name {
        "io_mutex_contended" => Box::pin(mutex_contended(c, group)),
        "io_queue_pingpong" => Box::pin(queue_pingpong(c, case.n, group)),
        "io_fan_in" => Box::pin(fan_in(c, group)),
        "io_fan_out" => Box::pin(fan_out(c, group)),
        "io_spawn" => Box::pin(spawn(c)),
        "io_spawn_group" => Box::pin(spawn_group(c, group)),
        "io_sleep" => Box::pin(sleep(c, case.size, group)),
        "io_tcp_pingpong" => Box::pin(tcp_pingpong(c, case.size as usize)),
        "io_tcp_echo_conns" => Box::pin(tcp_echo_conns(c, case.n as usize)),
        "io_tcp_connect" => Box::pin(tcp_connect(c)),
        other => return Err(format!("unknown io benchmark {other}")),
    };
    rt.block_on(async move { tokio::spawn(driver).await }).map_err(|e| format!("driver task failed: {e}"))?
}

/// Joins every task of `set`; the first task error (or panic) is the benchmark's failure.
async fn join_all(set: &mut JoinSet<Result<(), String>>) -> Result<(), String> {
    let mut first: Option<String> = None;
    while let Some(joined) = set.join_next().await {
        let outcome = joined.map_err(|e| format!("task failed: {e}")).and_then(|r| r);
        if let (Err(message), None) = (outcome, &first) {
            first = Some(message);
        }
    }
    first.map_or(Ok(()), Err)
}

fn keep(samples: &mut Vec<Sample>, k: u64, c: &Constants, sample: Sample) {
    if k >= c.warmup {
        samples.push(sample);
    }
}

// -- io_mutex_contended ---------------------------------------------------------------------

async fn mutex_contended(c: Constants, kind: GroupKind) -> Samples {
    let tasks = c.io_mutex_tasks;
    let per_task = c.async_ops / tasks;
    let shared = Arc::new(Mutex::new(0u64));
    let mut group = Group::new(kind, tasks);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        *shared.lock().await = 0;
        let mark = Mark::start();
        for _ in 0..tasks {
            let shared = Arc::clone(&shared);
            group.spawn(async move {
                for _ in 0..per_task {
                    *shared.lock().await += 1;
                }
                Ok(())
            });
        }
        group.join().await?;
        let sample = mark.stop();
        expect_eq("counter", *shared.lock().await, tasks * per_task)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

// -- io_queue_pingpong ----------------------------------------------------------------------

async fn queue_pingpong(c: Constants, pairs: u64, kind: GroupKind) -> Samples {
    let rounds = pingpong_rounds(c.ping_pong_rounds, pairs);
    let answered = Arc::new(AtomicU64::new(0));
    let mut group = Group::new(kind, 2 * pairs);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        answered.store(0, Ordering::Relaxed);
        // The channels are built before the start mark, as the Zig sides build their queues.
        let channels: Vec<_> = (0..pairs).map(|_| (mpsc::channel::<u64>(1), mpsc::channel::<u64>(1))).collect();
        let mark = Mark::start();
        for ((there_tx, mut there_rx), (back_tx, mut back_rx)) in channels {
            group.spawn(async move {
                for _ in 0..rounds {
                    let value = there_rx.recv().await.ok_or("queue closed")?;
                    back_tx.send(value).await.map_err(|_| "queue closed")?;
                }
                Ok(())
            });
            let answered = Arc::clone(&answered);
            group.spawn(async move {
                let mut count = 0;
                for round in 0..rounds {
                    there_tx.send(round).await.map_err(|_| "queue closed")?;
                    if back_rx.recv().await.ok_or("queue closed")? == round {
                        count += 1;
                    }
                }
                // Relaxed: read by the driver after joining the task.
                answered.fetch_add(count, Ordering::Relaxed);
                Ok(())
            });
        }
        group.join().await?;
        let sample = mark.stop();
        expect_eq("round trips answered", answered.load(Ordering::Relaxed), pairs * rounds)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

// -- io_fan_in / io_fan_out -----------------------------------------------------------------

async fn fan_in(c: Constants, kind: GroupKind) -> Samples {
    let tasks = c.io_fan_tasks;
    let items = fan_items(c.io_fan_items, tasks);
    let per_task = items / tasks;
    let mut group = Group::new(kind, tasks);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let (tx, mut rx) = mpsc::channel::<u64>(c.io_queue_capacity as usize);
        let mark = Mark::start();
        let consumer: JoinHandle<(u64, u64)> = tokio::spawn(async move {
            let (mut sum, mut received) = (0, 0);
            for _ in 0..items {
                match rx.recv().await {
                    Some(value) => {
                        sum += value;
                        received += 1;
                    }
                    None => break,
                }
            }
            (sum, received)
        });
        for t in 0..tasks {
            let tx = tx.clone();
            group.spawn(async move {
                for j in 0..per_task {
                    tx.send(1 + t * per_task + j).await.map_err(|_| "queue closed")?;
                }
                Ok(())
            });
        }
        drop(tx);
        group.join().await?;
        let (sum, received) = consumer.await.map_err(|e| format!("consumer failed: {e}"))?;
        let sample = mark.stop();
        expect_eq("items received", received, items)?;
        expect_eq("sum of the items", sum, items * (items + 1) / 2)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

async fn fan_out(c: Constants, kind: GroupKind) -> Samples {
    let tasks = c.io_fan_tasks;
    let items = fan_items(c.io_fan_items, tasks);
    let per_task = items / tasks;
    let sum = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let mut group = Group::new(kind, tasks + 1);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        sum.store(0, Ordering::Relaxed);
        received.store(0, Ordering::Relaxed);
        let (tx, rx) = async_channel::bounded::<u64>(c.io_queue_capacity as usize);
        let mark = Mark::start();
        for _ in 0..tasks {
            let (rx, sum, received) = (rx.clone(), Arc::clone(&sum), Arc::clone(&received));
            group.spawn(async move {
                let mut mine = 0;
                for _ in 0..per_task {
                    mine += rx.recv().await.map_err(|_| "queue closed")?;
                }
                // Relaxed: read by the driver after joining the tasks.
                sum.fetch_add(mine, Ordering::Relaxed);
                received.fetch_add(per_task, Ordering::Relaxed);
                Ok(())
            });
        }
        drop(rx);
        group.spawn(async move {
            for value in 1..=items {
                tx.send(value).await.map_err(|_| "queue closed")?;
            }
            Ok(())
        });
        group.join().await?;
        let sample = mark.stop();
        expect_eq("items received", received.load(Ordering::Relaxed), items)?;
        expect_eq("sum of the items", sum.load(Ordering::Relaxed), items * (items + 1) / 2)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

// -- io_spawn / io_spawn_group --------------------------------------------------------------

async fn spawn(c: Constants) -> Samples {
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mut sum = 0u64;
        let mark = Mark::start();
        for value in 0..c.task_ops {
            sum += tokio::spawn(async move { value }).await.map_err(|e| format!("task failed: {e}"))?;
        }
        let sample = mark.stop();
        expect_eq("sum of the results", sum, c.task_ops * (c.task_ops - 1) / 2)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

async fn spawn_group(c: Constants, kind: GroupKind) -> Samples {
    let counter = Arc::new(AtomicU64::new(0));
    let mut group = Group::new(kind, c.io_group_tasks);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        counter.store(0, Ordering::Relaxed);
        let mark = Mark::start();
        for _ in 0..c.io_group_tasks {
            let counter = Arc::clone(&counter);
            group.spawn(async move {
                // Relaxed: read by the driver after joining the group.
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
        }
        group.join().await?;
        let sample = mark.stop();
        expect_eq("tasks run", counter.load(Ordering::Relaxed), c.io_group_tasks)?;
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

// -- io_sleep -------------------------------------------------------------------------------

async fn sleep(c: Constants, ms: u64, kind: GroupKind) -> Samples {
    let duration = Duration::from_millis(ms);
    let counter = Arc::new(AtomicU64::new(0));
    let mut group = Group::new(kind, c.io_sleep_tasks);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        counter.store(0, Ordering::Relaxed);
        let mark = Mark::start();
        for _ in 0..c.io_sleep_tasks {
            let counter = Arc::clone(&counter);
            group.spawn(async move {
                tokio::time::sleep(duration).await;
                // Relaxed: read by the driver after joining the group.
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
        }
        group.join().await?;
        let sample = mark.stop();
        expect_eq("sleepers woken", counter.load(Ordering::Relaxed), c.io_sleep_tasks)?;
        if sample.elapsed_ns < duration.as_nanos() as u64 {
            return Err(format!("all woke after {} ns, before the {} ns sleep ended", sample.elapsed_ns, duration.as_nanos()));
        }
        keep(&mut samples, k, &c, sample);
    }
    Ok(samples)
}

// -- TCP ------------------------------------------------------------------------------------

/// Byte `index` of the payload of round `round` (the same as io_benches.zig's `patternByte`).
pub fn pattern_byte(round: u64, index: usize) -> u8 {
    if index == 0 { round as u8 } else { (index.wrapping_mul(31).wrapping_add(7)) as u8 }
}

fn fill_payload(payload: &mut [u8], round: u64) {
    for (index, byte) in payload.iter_mut().enumerate() {
        *byte = pattern_byte(round, index);
    }
}

/// The echo server of a TCP case: accepts until stopped, one echo task per connection.
struct EchoServer {
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
    accept_task: JoinHandle<Result<JoinSet<Result<u64, String>>, String>>,
}

/// The buffer is not zeroed, as on the Zig side (`Allocator.alloc`): `read_buf` reads into the
/// `Vec`'s spare capacity, and only what it read is written back.
async fn echo_connection(mut stream: TcpStream) -> Result<u64, String> {
    let mut buffer: Vec<u8> = Vec::with_capacity(SERVER_BUFFER_BYTES);
    let mut echoed = 0u64;
    loop {
        buffer.clear();
        let count = stream.read_buf(&mut buffer).await.map_err(|e| format!("server read failed: {e}"))?;
        if count == 0 {
            return Ok(echoed);
        }
        stream.write_all(&buffer[..count]).await.map_err(|e| format!("server write failed: {e}"))?;
        echoed += count as u64;
    }
}

impl EchoServer {
    async fn start() -> Result<EchoServer, String> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.map_err(|e| format!("bind failed: {e}"))?;
        let address = listener.local_addr().map_err(|e| format!("local address: {e}"))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopping);
        let accept_task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let (stream, _) = listener.accept().await.map_err(|e| format!("accept failed: {e}"))?;
                // Acquire: pairs with the release store in `stop` before its wake-up connection.
                if stop.load(Ordering::Acquire) {
                    return Ok(connections);
                }
                stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
                connections.spawn(echo_connection(stream));
            }
        });
        Ok(EchoServer { address, stopping, accept_task })
    }

    /// Stops accepting (one more connection wakes the accept task), joins every echo task
    /// (they end when their clients close) and checks the bytes echoed.
    async fn stop(self, expected_bytes: u64) -> Result<(), String> {
        self.stopping.store(true, Ordering::Release);
        drop(TcpStream::connect(self.address).await.map_err(|e| format!("connect failed: {e}"))?);
        let mut connections = self.accept_task.await.map_err(|e| format!("accept task failed: {e}"))??;
        let mut echoed = 0;
        while let Some(joined) = connections.join_next().await {
            echoed += joined.map_err(|e| format!("echo task failed: {e}"))??;
        }
        expect_eq("bytes echoed by the server", echoed, expected_bytes)
    }
}

/// A client connection with its payload and echo buffers.
struct Client {
    stream: TcpStream,
    payload: Vec<u8>,
    echo: Vec<u8>,
}

impl Client {
    async fn open(address: SocketAddr, size: usize) -> Result<Client, String> {
        let stream = TcpStream::connect(address).await.map_err(|e| format!("connect failed: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        Ok(Client { stream, payload: vec![0; size], echo: vec![0; size] })
    }

    /// One round trip: write the payload of `round`, read as many bytes back, compare.
    async fn round_trip(&mut self, round: u64) -> Result<(), String> {
        fill_payload(&mut self.payload, round);
        self.stream.write_all(&self.payload).await.map_err(|e| format!("write failed: {e}"))?;
        self.stream.read_exact(&mut self.echo).await.map_err(|e| format!("read failed: {e}"))?;
        if self.payload != self.echo {
            return Err(format!("round trip {round}: echo differs from what was sent"));
        }
        Ok(())
    }
}

async fn tcp_pingpong(c: Constants, size: usize) -> Samples {
    let server = EchoServer::start().await?;
    let mut client = Client::open(server.address, size).await?;
    let mut round = 0u64;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mark = Mark::start();
        for _ in 0..c.io_net_rounds {
            client.round_trip(round).await?;
            round += 1;
        }
        let sample = mark.stop();
        keep(&mut samples, k, &c, sample);
    }
    drop(client);
    server.stop(round * size as u64).await?;
    Ok(samples)
}

async fn tcp_echo_conns(c: Constants, conns: usize) -> Samples {
    let server = EchoServer::start().await?;
    let mut clients = Vec::with_capacity(conns);
    for _ in 0..conns {
        clients.push(Client::open(server.address, CONNS_PAYLOAD_BYTES).await?);
    }
    let rounds = c.io_net_rounds;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    // Every variant collects these tasks in a Vec<JoinHandle> (each hands its connection back).
    let mut handles: Vec<JoinHandle<Result<Client, String>>> = Vec::with_capacity(conns);
    for k in 0..c.warmup + c.iterations {
        let mark = Mark::start();
        for mut client in clients.drain(..) {
            handles.push(tokio::spawn(async move {
                for r in 0..rounds {
                    client.round_trip(k * rounds + r).await?;
                }
                Ok(client)
            }));
        }
        for handle in handles.drain(..) {
            clients.push(handle.await.map_err(|e| format!("client task failed: {e}"))??);
        }
        let sample = mark.stop();
        keep(&mut samples, k, &c, sample);
    }
    drop(clients);
    server.stop((c.warmup + c.iterations) * conns as u64 * rounds * CONNS_PAYLOAD_BYTES as u64).await?;
    Ok(samples)
}

/// One io_tcp_connect op: connect, Nagle off, write 1 B, read it back, compare, close.
async fn connect_once(address: SocketAddr, value: u8) -> Result<(), String> {
    let mut stream = TcpStream::connect(address).await.map_err(|e| format!("connect failed: {e}"))?;
    stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
    stream.write_all(&[value]).await.map_err(|e| format!("write failed: {e}"))?;
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte).await.map_err(|e| format!("read failed: {e}"))?;
    if byte[0] != value {
        return Err(format!("connect echo {} != {value}", byte[0]));
    }
    Ok(())
}

async fn tcp_connect(c: Constants) -> Samples {
    let server = EchoServer::start().await?;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..c.warmup + c.iterations {
        let mark = Mark::start();
        for op in 0..c.io_connect_ops {
            connect_once(server.address, op as u8).await?;
        }
        let sample = mark.stop();
        keep(&mut samples, k, &c, sample);
    }
    server.stop((c.warmup + c.iterations) * c.io_connect_ops).await?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_and_sizes_match_the_zig_side() {
        assert_eq!(pattern_byte(5, 0), 5);
        assert_eq!(pattern_byte(5, 1), 38);
        assert_eq!(pingpong_rounds(1000, 100), 10);
        assert_eq!(pingpong_rounds(50, 100), 1);
        assert_eq!(fan_items(9999, 1000), 9000);
    }

    #[test]
    fn every_io_case_runs_and_checks_itself() {
        let mut c = Constants::load("quick").expect("quick profile");
        c.iterations = 2;
        c.warmup = 1;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        for name in ["io_mutex_contended", "io_queue_pingpong", "io_fan_in", "io_fan_out", "io_spawn", "io_spawn_group",
                     "io_sleep", "io_tcp_pingpong", "io_tcp_echo_conns", "io_tcp_connect"] {
            for case in cases(name, &c) {
                let samples =
                    run_case(&rt, &case, &c, GroupKind::Handles).unwrap_or_else(|e| panic!("{}: {e}", case.name));
                assert_eq!(samples.len(), 2, "{} {}", case.name, case.param);
            }
        }
    }

    #[test]
    fn every_group_kind_joins_every_task_and_reports_the_first_failure() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        for kind in [GroupKind::Handles, GroupKind::JoinSet, GroupKind::Tracker] {
            let counter = Arc::new(AtomicU64::new(0));
            let outcome = rt.block_on(async {
                let mut group = Group::new(kind, 100);
                for round in 0..2u64 {
                    for i in 0..100u64 {
                        let counter = Arc::clone(&counter);
                        group.spawn(async move {
                            tokio::task::yield_now().await;
                            counter.fetch_add(1, Ordering::Relaxed);
                            if round == 1 && i == 37 { Err(format!("task {i} failed")) } else { Ok(()) }
                        });
                    }
                    let joined = group.join().await;
                    assert_eq!(counter.load(Ordering::Relaxed), 100 * (round + 1), "{kind:?}: every task ran before join returned");
                    if round == 0 {
                        assert_eq!(joined, Ok(()), "{kind:?}");
                    } else {
                        return joined;
                    }
                }
                unreachable!()
            });
            assert_eq!(outcome, Err("task 37 failed".to_string()), "{kind:?}");
        }
        assert_eq!(GroupKind::of(None), GroupKind::Handles);
        assert_eq!(GroupKind::of(Some(2)), GroupKind::Tracker);
    }

    #[test]
    fn the_group_variants_run_every_group_row() {
        let mut c = Constants::load("quick").expect("quick profile");
        c.iterations = 1;
        c.warmup = 0;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        for kind in [GroupKind::JoinSet, GroupKind::Tracker] {
            for name in ["io_mutex_contended", "io_queue_pingpong", "io_fan_in", "io_fan_out", "io_spawn_group", "io_sleep"] {
                for case in cases(name, &c) {
                    let samples = run_case(&rt, &case, &c, kind).unwrap_or_else(|e| panic!("{kind:?} {}: {e}", case.name));
                    assert_eq!(samples.len(), 1);
                }
            }
        }
    }
}
