//! tokio_bench: the Tokio side of the ampere vs Tokio benchmarks.
//!
//! Same program interface, benchmarks, CSV/JSON/metadata as the Zig side
//! (runtime/bench/README.md). Flow: parse the command line, select the runtime variant
//! (variants.json), load the constants profile and apply overrides, select the cases and plan
//! the run (Tiers 3–4 once per worker count of `--workers`), then run them one by one
//! (progress on stderr between cases, never inside a timed region), and finally write the CSV
//! and print the table or the summary JSON. A benchmark that fails its own check stops the
//! program with exit code 1; a bad command line exits with 2.

mod alloc;
mod async_tiers;
mod cli;
mod constants;
mod echo;
mod harness;
mod http_server;
mod io;
mod net;
mod output;
mod sync_tiers;
mod variants;

use std::pin::Pin;
use std::process::ExitCode;

use tokio::runtime::Runtime;

use crate::alloc::{CountingAlloc, Sample};
use crate::constants::{Constants, sweep_sizes};
use crate::harness::{Case, Outcome};
use crate::variants::Variant;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// The base runtime of this program; the default `--variant`.
const RUNTIME: &str = "tokio";

type Samples = Result<Vec<Sample>, String>;
type AsyncDriver = fn(Constants) -> Pin<Box<dyn Future<Output = Samples> + Send>>;

/// How a benchmark runs.
#[derive(Clone, Copy)]
enum Runner {
    /// Tiers 0–2: on the calling thread, no runtime.
    Sync(fn(&Constants) -> Samples),
    /// Tiers 3–4: a driver task on the runtime with the case's worker count.
    Async(AsyncDriver),
    /// The echo suite: `echo::run_case` on the 1-worker runtime.
    Echo,
    /// The net suite: `net::run_case` on the `num_workers` runtime.
    Net,
    /// The io suite: `io::run_case` on the runtime with the case's worker count.
    Io,
}

struct Bench {
    suite: &'static str,
    tier: u8,
    name: &'static str,
    runner: Runner,
}

macro_rules! driver {
    ($f:path) => {
        Runner::Async(|c| Box::pin($f(c)))
    };
}

/// Every benchmark in canonical order (runtime/bench/README.md).
fn benches() -> Vec<Bench> {
    use Runner::*;
    use async_tiers as a;
    use sync_tiers as s;
    let micro = |tier, name, runner| Bench { suite: "micro", tier, name, runner };
    let echo = |name| Bench { suite: "echo", tier: 0, name, runner: Echo };
    let net = |name| Bench { suite: "net", tier: 0, name, runner: Net };
    let io = |name| Bench { suite: "io", tier: 0, name, runner: Io };
    vec![
        micro(0, "floor_cas_store", Sync(s::floor_cas_store)),
        micro(0, "floor_fetch_add", Sync(s::floor_fetch_add)),
        micro(1, "mutex", Sync(s::mutex)),
        micro(1, "rwlock_read", Sync(s::rwlock_read)),
        micro(1, "rwlock_write", Sync(s::rwlock_write)),
        micro(1, "semaphore", Sync(s::semaphore)),
        micro(1, "oncecell_get", Sync(s::oncecell_get)),
        micro(1, "oncecell_set", Sync(s::oncecell_set)),
        micro(1, "notify", Sync(s::notify)),
        micro(1, "barrier", Sync(s::barrier)),
        micro(2, "channel_send", Sync(s::channel_send)),
        micro(2, "channel_recv", Sync(s::channel_recv)),
        micro(2, "channel_roundtrip", Sync(s::channel_roundtrip)),
        micro(2, "oneshot", Sync(s::oneshot)),
        micro(2, "oneshot_owned", Sync(s::oneshot_owned)),
        micro(2, "broadcast", Sync(s::broadcast)),
        micro(2, "watch", Sync(s::watch)),
        micro(2, "watch_rc", Sync(s::watch_rc)),
        micro(2, "broadcast_rc", Sync(s::broadcast_rc)),
        micro(3, "channel_mpmc", driver!(a::channel_mpmc)),
        micro(3, "channel_mpsc", driver!(a::channel_mpsc)),
        micro(3, "mutex_contended", driver!(a::mutex_contended)),
        micro(3, "rwlock_contended", driver!(a::rwlock_contended)),
        micro(3, "semaphore_contended", driver!(a::semaphore_contended)),
        micro(4, "task_spawn", driver!(a::task_spawn)),
        micro(4, "task_spawn_batch", driver!(a::task_spawn_batch)),
        micro(4, "blocking_spawn", driver!(a::blocking_spawn)),
        micro(4, "yield_many", driver!(a::yield_many)),
        micro(4, "ping_pong", driver!(a::ping_pong)),
        micro(4, "chained_spawn", driver!(a::chained_spawn)),
        echo("echo_f64"),
        echo("echo_string_1mib"),
        echo("echo_bytes_1mib"),
        echo("echo_bytes_sweep"),
        echo("echo_shared_sweep"),
        net("tcp_pingpong"),
        net("tcp_echo_conns"),
        net("tcp_connect"),
        net("tcp_stream"),
        io("io_mutex_contended"),
        io("io_queue_pingpong"),
        io("io_fan_in"),
        io("io_fan_out"),
        io("io_spawn"),
        io("io_spawn_group"),
        io("io_sleep"),
        io("io_tcp_pingpong"),
        io("io_tcp_echo_conns"),
        io("io_tcp_connect"),
    ]
}

/// Operations per iteration of a micro benchmark (runtime/bench/README.md table).
fn micro_ops(name: &str, c: &Constants) -> u64 {
    match name {
        "channel_mpmc" => c.mpmc_producers * (c.async_ops / c.mpmc_producers),
        "channel_mpsc" => c.mpsc_producers * (c.async_ops / c.mpsc_producers),
        "mutex_contended" => c.contended_mutex_tasks * (c.async_ops / c.contended_mutex_tasks),
        "rwlock_contended" => (c.rwlock_readers + c.rwlock_writers) * c.rwlock_ops_per_task,
        "semaphore_contended" => c.contended_sem_tasks * (c.async_ops / c.contended_sem_tasks),
        "task_spawn" | "blocking_spawn" => c.task_ops,
        "task_spawn_batch" => (c.task_ops / c.spawn_batch_size) * c.spawn_batch_size,
        "yield_many" => c.yield_tasks * c.yield_per_task,
        "ping_pong" => c.ping_pong_rounds,
        "chained_spawn" => c.chain_length,
        "channel_send" | "channel_recv" | "channel_roundtrip" | "oneshot" | "oneshot_owned" | "broadcast" | "watch" | "watch_rc"
        | "broadcast_rc" => c.channel_ops,
        _ => c.sync_ops,
    }
}

/// The cases (benchmark × param) of one benchmark.
fn cases_of(bench: &Bench, c: &Constants) -> Vec<Case> {
    if bench.suite == "net" {
        return net::cases(bench.name, c);
    }
    if bench.suite == "io" {
        return io::cases(bench.name, c);
    }
    let echo_case = |param: String, n: u64, size: u64| Case::echo(bench.name, param, n, size);
    match bench.name {
        "echo_f64" | "echo_string_1mib" | "echo_bytes_1mib" => {
            let size = if bench.name == "echo_f64" { 8 } else { c.echo_payload_bytes };
            c.echo_batch_sizes.iter().map(|&n| echo_case(format!("n={n}"), n, size)).collect()
        }
        "echo_bytes_sweep" => sweep_sizes(c.echo_sweep_min_bytes, c.echo_sweep_max_bytes)
            .into_iter()
            .map(|size| echo_case(format!("size={size}"), c.echo_sweep_n, size))
            .collect(),
        "echo_shared_sweep" => sweep_sizes(c.echo_sweep_min_bytes, c.echo_shared_max_bytes)
            .into_iter()
            .map(|size| echo_case(format!("size={size}"), c.echo_sweep_n, size))
            .collect(),
        name => vec![Case::micro(bench.tier, bench.name, micro_ops(name, c))],
    }
}

/// Selected (case, runner) pairs in canonical order.
fn select(options: &cli::Options, c: &Constants) -> Vec<(Case, Runner)> {
    let mut selected = Vec::new();
    for bench in benches() {
        if !options.suite.includes(bench.suite) {
            continue;
        }
        if !options.filters.is_empty() && !options.filters.iter().any(|f| bench.name.contains(f.as_str())) {
            continue;
        }
        for case in cases_of(&bench, c) {
            debug_assert_eq!(case.suite, bench.suite);
            debug_assert_eq!(case.tier, bench.tier);
            selected.push((case, bench.runner));
        }
    }
    selected
}

/// The run order: the selected cases in canonical order, with the contiguous Tier 3–4 block
/// run once per worker count, in `worker_counts` order (one runtime per count, see
/// `Runtimes::micro`); every other case once.
fn plan(selected: Vec<(Case, Runner)>, worker_counts: &[u64]) -> Vec<(Case, Runner)> {
    assert!(!worker_counts.is_empty());
    let mut planned = Vec::new();
    let mut i = 0;
    while i < selected.len() {
        if !selected[i].0.swept() {
            planned.push(selected[i].clone());
            i += 1;
            continue;
        }
        let end = i + selected[i..].iter().take_while(|(case, _)| case.swept()).count();
        for &workers in worker_counts {
            planned.extend(selected[i..end].iter().map(|(case, runner)| (case.with_workers(workers), *runner)));
        }
        i = end;
    }
    planned
}

/// The runtimes of the process, each built on first use (never inside a timed region) by the
/// variant: the micro runtime with the case's worker count — replaced by a fresh runtime when
/// the count changes (the worker sweep) — the 1-worker echo runtime, and the `num_workers`
/// net runtime.
struct Runtimes<'v> {
    variant: &'v Variant,
    micro: Option<(u64, Runtime)>,
    echo: Option<Runtime>,
    net: Option<Runtime>,
}

impl<'v> Runtimes<'v> {
    fn new(variant: &'v Variant) -> Runtimes<'v> {
        Runtimes { variant, micro: None, echo: None, net: None }
    }

    fn micro(&mut self, workers: u64) -> Result<&Runtime, String> {
        if self.micro.as_ref().is_some_and(|(count, _)| *count != workers) {
            self.micro = None; // drop: shuts the old runtime down before the next is built
        }
        if self.micro.is_none() {
            self.micro = Some((workers, self.variant.build_runtime(workers)?));
        }
        Ok(&self.micro.as_ref().expect("built above").1)
    }

    fn echo(&mut self) -> Result<&Runtime, String> {
        if self.echo.is_none() {
            self.echo = Some(self.variant.build_runtime(1)?);
        }
        Ok(self.echo.as_ref().expect("built above"))
    }

    fn net(&mut self, workers: u64) -> Result<&Runtime, String> {
        if self.net.is_none() {
            self.net = Some(self.variant.build_runtime(workers)?);
        }
        Ok(self.net.as_ref().expect("built above"))
    }
}

fn run_case(case: &Case, runner: Runner, c: &Constants, rts: &mut Runtimes) -> Samples {
    match runner {
        Runner::Sync(f) => f(c),
        Runner::Async(driver) => async_tiers::drive(rts.micro(case.workers)?, driver(c.clone())),
        Runner::Echo => echo::run_case(rts.echo()?, case, c),
        Runner::Net => net::run_case(rts.net(c.num_workers)?, case, c),
        Runner::Io => {
            let group = io::GroupKind::of(rts.variant.setting("io_group"));
            io::run_case(rts.micro(case.workers)?, case, c, group)
        }
    }
}

enum Failure {
    /// Exit 2: bad command line.
    Usage(String),
    /// Exit 1: a benchmark failed its check, or results could not be written.
    Run(String),
}

fn run(args: &[String]) -> Result<(), Failure> {
    let options = cli::parse(args).map_err(Failure::Usage)?;
    if options.help {
        print!("{}", cli::USAGE);
        return Ok(());
    }
    let variant = variants::select(RUNTIME, options.variant.as_deref().unwrap_or(RUNTIME)).map_err(Failure::Usage)?;
    let mut constants = Constants::load(&options.profile).map_err(Failure::Usage)?;
    for assignment in &options.overrides {
        constants.apply_override(assignment).map_err(Failure::Usage)?;
    }
    let worker_counts = options.workers.clone().unwrap_or_else(|| vec![constants.num_workers]);
    let selected = select(&options, &constants);
    if selected.is_empty() {
        return Err(Failure::Usage("no benchmark matches the suite and filters".to_string()));
    }
    if options.list {
        for (case, _) in &selected {
            println!("{}", case.list_line());
        }
        return Ok(());
    }
    let span = options.csv.as_deref().map(output::span_path);
    for path in [&options.csv, &options.meta, &span].into_iter().flatten() {
        output::check_new(path).map_err(Failure::Usage)?;
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent {
            if !dir.is_dir() {
                return Err(Failure::Usage(format!("{}: folder does not exist", dir.display())));
            }
        }
    }
    if let Some(path) = &options.meta {
        output::write_atomic(path, &output::meta(&variant).render()).map_err(Failure::Run)?;
    }

    let planned = plan(selected, &worker_counts);
    let mut runtimes = Runtimes::new(&variant);
    let mut outcomes = Vec::with_capacity(planned.len());
    for (case, runner) in planned {
        harness::progress_start(&case);
        let samples = run_case(&case, runner, &constants, &mut runtimes)
            .map_err(|e| Failure::Run(format!("{}: {e}", case.name)))?;
        let expected = harness::expected_samples(&case, &constants);
        if samples.len() as u64 != expected {
            return Err(Failure::Run(format!("{}: {} samples, expected {expected}", case.name, samples.len())));
        }
        let outcome = Outcome { case, samples };
        harness::progress_done(&outcome);
        outcomes.push(outcome);
    }
    // Shut the runtimes down after the last benchmark, as the Zig side does.
    drop(runtimes);

    if let Some(path) = &options.csv {
        output::write_atomic(path, &output::csv(&variant.name, options.invocation, &outcomes)).map_err(Failure::Run)?;
        let span = output::span_path(path);
        output::write_atomic(&span, &output::span_csv(&variant.name, options.invocation, &outcomes)).map_err(Failure::Run)?;
    }
    if options.json {
        let summary = output::summary(&variant, &options.profile, options.invocation, &constants, &worker_counts, &outcomes);
        print!("{}", summary.render());
    } else {
        print!("{}", output::table(&variant.name, &outcomes));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("http-server") {
        // The http suite's server (src/http_server.rs): its own protocol, not a benchmark run.
        return match http_server::main(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err((message, code)) => {
                eprintln!("error: {message}");
                ExitCode::from(code)
            }
        };
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Run(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn canonical_list_has_every_benchmark_once() {
        let names: Vec<&str> = benches().iter().map(|b| b.name).collect();
        assert_eq!(names.len(), 49);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn selection_by_suite_and_filter() {
        let c = Constants::load("full").unwrap();
        let micro = select(&cli::parse(&[]).unwrap(), &c);
        assert_eq!(micro.len(), 30);
        assert_eq!(micro[0].0.name, "floor_cas_store");
        let echo = select(&cli::parse(&strings("--suite echo")).unwrap(), &c);
        // 3 × 3 batch sizes + 18 bytes sizes (8 B … 1 MiB) + 7 shared sizes (8 … 512 B).
        assert_eq!(echo.len(), 9 + 18 + 7);
        let net = select(&cli::parse(&strings("--suite net")).unwrap(), &c);
        let keys: Vec<String> = net.iter().map(|(case, _)| format!("{} {} {}", case.name, case.param, case.workers)).collect();
        assert_eq!(
            keys,
            [
                "tcp_pingpong size=64 4",
                "tcp_pingpong size=4096 4",
                "tcp_pingpong size=65536 4",
                "tcp_echo_conns conns=1 4",
                "tcp_echo_conns conns=16 4",
                "tcp_echo_conns conns=128 4",
                "tcp_connect  4",
                "tcp_stream size=1048576 4",
            ]
        );
        assert_eq!(echo[0].0.list_line(), "echo 0 echo_f64 n=1");
        let some = select(&cli::parse(&strings("--suite all --filter rwlock --filter f64")).unwrap(), &c);
        let names: Vec<&str> = some.iter().map(|(case, _)| case.name).collect();
        assert_eq!(names, vec!["rwlock_read", "rwlock_write", "rwlock_contended", "echo_f64", "echo_f64", "echo_f64"]);
    }

    #[test]
    fn ops_follow_the_readme_table() {
        let c = Constants::load("full").unwrap();
        let ops = |name: &str| micro_ops(name, &c);
        assert_eq!(ops("mutex"), 1_000_000);
        assert_eq!(ops("watch"), 100_000);
        assert_eq!(ops("watch_rc"), 100_000);
        assert_eq!(ops("broadcast_rc"), 100_000);
        assert_eq!(ops("rwlock_contended"), 10_002);
        assert_eq!(ops("task_spawn_batch"), 1_000);
        assert_eq!(ops("yield_many"), 200_000);
        assert_eq!(ops("channel_mpmc"), 10_000);
    }

    #[test]
    fn command_line_errors_exit_2() {
        for (line, needle) in [
            ("--suite nope", "unknown suite"),
            ("--set nope=1", "unknown key"),
            ("--set sync_ops=x", "not a non-negative integer"),
            ("--filter zzz_no_such", "no benchmark matches"),
            ("--profile x", "unknown profile"),
            ("--workers 0", "0 is outside 1..1024"),
            ("--variant ampere.nospin", "--variant ampere.nospin: a variant of ampere; this program runs tokio variants only"),
            ("--variant tokio.turbo", "--variant: unknown variant 'tokio.turbo'"),
        ] {
            match run(&strings(line)) {
                Err(Failure::Usage(message)) => {
                    assert!(message.contains(needle) && !message.contains('\n'), "{line}: {message}")
                }
                _ => panic!("{line}: expected a usage error"),
            }
        }
    }

    #[test]
    fn plan_runs_tier_3_4_once_per_worker_count_in_order() {
        let c = Constants::load("quick").unwrap();
        let selected = select(&cli::parse(&strings("--suite all --filter task_spawn --filter mutex --filter echo_f64")).unwrap(), &c);
        let planned = plan(selected, &[4, 1]);
        let order: Vec<String> = planned.iter().map(|(case, _)| format!("{}:{}", case.name, case.workers)).collect();
        assert_eq!(
            order,
            vec![
                "mutex:0", "mutex_contended:4", "task_spawn:4", "task_spawn_batch:4", "mutex_contended:1", "task_spawn:1",
                "task_spawn_batch:1", "echo_f64:1", "echo_f64:1", "io_mutex_contended:4", "io_mutex_contended:1"
            ]
        );
    }

    #[test]
    fn a_worker_sweep_runs_tier_3_4_per_count_with_fresh_runtimes() {
        let variant = variants::select(RUNTIME, RUNTIME).unwrap();
        let mut runtimes = Runtimes::new(&variant);
        assert_eq!(runtimes.micro(2).unwrap().metrics().num_workers(), 2);
        assert_eq!(runtimes.micro(1).unwrap().metrics().num_workers(), 1);
        assert_eq!(runtimes.echo().unwrap().metrics().num_workers(), 1);

        let dir = std::env::temp_dir().join(format!("tokio_bench_sweep_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("tokio.csv");
        let line = format!(
            "--quick --suite all --filter fetch_add --filter yield_many --filter echo_f64 --set echo_batch_sizes=2 \
             --workers 2,1 --csv {}",
            csv.display()
        );
        assert!(run(&strings(&line)).is_ok());
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut rows = text.lines();
        assert_eq!(rows.next().unwrap(), output::CSV_HEADER);
        // (benchmark, workers, rows): 3 iterations each, echo 5 batches.
        for (name, workers, count) in [("floor_fetch_add", 0, 3), ("yield_many", 2, 3), ("yield_many", 1, 3), ("echo_f64", 1, 5)] {
            for _ in 0..count {
                let columns: Vec<&str> = rows.next().unwrap().split(',').collect();
                assert_eq!(columns.len(), 13);
                assert_eq!((columns[0], columns[4]), ("tokio", name));
                assert_eq!(columns[10].parse::<u64>().unwrap(), workers);
                assert!(columns[9].parse::<u64>().unwrap() > 0, "cpu_ns of real work");
            }
        }
        assert!(rows.next().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn quick_run_writes_csv_and_meta() {
        let dir = std::env::temp_dir().join(format!("tokio_bench_main_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("tokio.csv");
        let meta = dir.join("tokio.meta.json");
        let line = format!(
            "--quick --suite all --filter mutex --filter echo_f64 --set echo_batches=2 --invocation 1 --csv {} --meta {} --json",
            csv.display(),
            meta.display()
        );
        assert!(run(&strings(&line)).is_ok());
        let text = std::fs::read_to_string(&csv).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows[0], output::CSV_HEADER);
        // mutex + mutex_contended + io_mutex_contended: 3 iterations each; echo_f64 n=1, n=10: 2 batches each.
        assert_eq!(rows.len(), 1 + 3 + 3 + 2 + 2 + 3);
        assert!(rows.iter().any(|r| r.starts_with("tokio,1,io,0,io_mutex_contended,tasks=4,0,400,")));
        assert!(rows[1].starts_with("tokio,1,micro,1,mutex,,0,2000,"));
        assert_eq!(rows[1].split(',').nth(10), Some("0"), "workers: Tier 1 has no runtime");
        assert!(rows.iter().any(|r| r.starts_with("tokio,1,echo,0,echo_f64,n=10,1,10,")));
        // The span file beside the CSV: one row per case (mutex, mutex_contended, io_mutex_contended, echo n=1, n=10).
        let span = std::fs::read_to_string(dir.join("tokio.span.csv")).unwrap();
        let spans: Vec<&str> = span.lines().collect();
        assert_eq!(spans[0], output::SPAN_HEADER);
        assert_eq!(spans.len(), 1 + 5);
        assert!(spans[1].starts_with("tokio,1,micro,1,mutex,,0,3,6000,"));
        let span_ns: u64 = spans[1].split(',').nth(9).unwrap().parse().unwrap();
        let sum_ns: u64 = rows[1..4].iter().map(|r| r.split(',').nth(8).unwrap().parse::<u64>().unwrap()).sum();
        assert!(span_ns >= sum_ns, "span {span_ns} < sum of its samples {sum_ns}");
        let meta_json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
        assert_eq!(meta_json["compiler"], "rustc");
        assert_eq!(meta_json["variant"], "tokio");
        assert_eq!(meta_json["schema_version"], 2);
        // A second run must refuse to overwrite.
        assert!(matches!(run(&strings(&line)), Err(Failure::Usage(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
