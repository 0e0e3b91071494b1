//! The measuring harness: benchmark cases, warmup + measured iterations, statistics, progress.
//!
//! A benchmark function receives its case and the constants and returns exactly
//! `iterations` samples (echo: `echo_batches`), having run and discarded the warmups itself:
//! Tier 3/4 drivers and echo loops must keep warmup and measurement inside one runtime
//! entry, so the loop lives in the benchmark, with `repeat` as the helper for the simple
//! (synchronous) ones. Progress goes to stderr before and after a case, never inside it.

use crate::alloc::Sample;
use crate::constants::Constants;

/// One row of `--list`: a benchmark with one parameter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub suite: &'static str,
    pub tier: u8,
    pub name: &'static str,
    /// Empty, `n=<batch>` or `size=<bytes>`.
    pub param: String,
    /// Operations per iteration (echo: batch size n).
    pub ops: u64,
    /// Echo only: batch size and payload size; 0 in the micro suite.
    pub n: u64,
    pub size: u64,
    /// Worker threads of the runtime the case runs on (the CSV `workers` column): 0 for
    /// Tiers 0–2 (no runtime), the sweep's count for Tiers 3–4 (`with_workers`), 1 for echo,
    /// num_workers for net.
    pub workers: u64,
}

impl Case {
    pub fn micro(tier: u8, name: &'static str, ops: u64) -> Case {
        Case { suite: "micro", tier, name, param: String::new(), ops, n: 0, size: 0, workers: 0 }
    }

    pub fn echo(name: &'static str, param: String, n: u64, size: u64) -> Case {
        Case { suite: "echo", tier: 0, name, param, ops: n, n, size, workers: 1 }
    }

    /// A net-suite case: `param_name` is "" (no parameter), "size" or "conns"; it runs on the
    /// net runtime (`workers` = num_workers).
    pub fn net(name: &'static str, param_name: &str, value: u64, ops: u64, workers: u64) -> Case {
        let param = if param_name.is_empty() { String::new() } else { format!("{param_name}={value}") };
        let n = if param_name == "conns" { value } else { 0 };
        let size = if param_name == "size" { value } else { 0 };
        Case { suite: "net", tier: 0, name, param, ops, n, size, workers }
    }

    /// An io-suite case: `param_name` is "" (no parameter) or the parameter's name, whose
    /// value goes to `size` for `size` and `d_ms`, else to `n` (as on the Zig side).
    pub fn io(name: &'static str, param_name: &str, value: u64, ops: u64) -> Case {
        let param = if param_name.is_empty() { String::new() } else { format!("{param_name}={value}") };
        let in_size = param_name == "size" || param_name == "d_ms";
        let (n, size) = if in_size { (0, value) } else { (value, 0) };
        Case { suite: "io", tier: 0, name, param, ops, n, size, workers: 1 }
    }

    /// Whether the case runs at every worker count of the sweep: Tiers 3–4 and every io case
    /// (on the micro suite's runtime with that count).
    pub fn swept(&self) -> bool {
        self.suite == "io" || (self.suite == "micro" && self.tier >= 3)
    }

    /// The Tier 3–4 case at `workers` workers.
    pub fn with_workers(&self, workers: u64) -> Case {
        assert!(self.swept() && workers >= 1);
        Case { workers, ..self.clone() }
    }

    /// Key in the summary JSON: `name` or `name[param]`, and `@w<workers>` for a Tier 3–4
    /// case when the run sweeps more than one worker count (`sweep`).
    pub fn key(&self, sweep: bool) -> String {
        let mut key = if self.param.is_empty() { self.name.to_string() } else { format!("{}[{}]", self.name, self.param) };
        if sweep && self.swept() {
            key.push_str(&format!("@w{}", self.workers));
        }
        key
    }

    pub fn list_line(&self) -> String {
        let line = format!("{} {} {} {}", self.suite, self.tier, self.name, self.param);
        line.trim_end().to_string()
    }
}

/// The measured samples of one case.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub case: Case,
    pub samples: Vec<Sample>,
}

impl Outcome {
    /// Median of the measured elapsed times: the middle sample, or the floor of the mean of
    /// the two middle samples for an even count (the Zig side computes it identically).
    pub fn median_ns(&self) -> u64 {
        median(self.samples.iter().map(|s| s.elapsed_ns).collect())
    }

    pub fn min_ns(&self) -> u64 {
        self.samples.iter().map(|s| s.elapsed_ns).min().unwrap_or(0)
    }

    pub fn ns_per_op(&self) -> f64 {
        self.median_ns() as f64 / self.case.ops as f64
    }

    pub fn ops_per_sec(&self) -> f64 {
        let ns = self.ns_per_op();
        if ns > 0.0 { 1e9 / ns } else { 0.0 }
    }

    /// Median of the measured CPU times (same rule as `median_ns`).
    pub fn median_cpu_ns(&self) -> u64 {
        median(self.samples.iter().map(|s| s.cpu_ns).collect())
    }

    pub fn cpu_ns_per_op(&self) -> f64 {
        self.median_cpu_ns() as f64 / self.case.ops as f64
    }

    /// Mean over measured iterations of the bytes allocated, divided by ops.
    pub fn bytes_per_op(&self) -> f64 {
        mean(self.samples.iter().map(|s| s.alloc_bytes)) / self.case.ops as f64
    }

    pub fn allocs_per_op(&self) -> f64 {
        mean(self.samples.iter().map(|s| s.alloc_count)) / self.case.ops as f64
    }
}

pub fn median(mut values: Vec<u64>) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let len = values.len();
    if len % 2 == 1 {
        values[len / 2]
    } else {
        let (a, b) = (values[len / 2 - 1], values[len / 2]);
        a / 2 + b / 2 + (a % 2 + b % 2) / 2
    }
}

fn mean(values: impl Iterator<Item = u64>) -> f64 {
    let (sum, count) = values.fold((0u128, 0u64), |(s, c), v| (s + v as u128, c + 1));
    if count == 0 { 0.0 } else { sum as f64 / count as f64 }
}

/// Runs `one` `warmup` times (discarded) and then `iterations` times; stops at the first
/// failure. `one` brackets its timed region with `Mark::start`/`Mark::stop` and verifies its
/// result outside the bracket.
pub fn repeat(
    warmup: u64,
    iterations: u64,
    mut one: impl FnMut(u64) -> Result<Sample, String>,
) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::with_capacity(iterations as usize);
    for k in 0..warmup + iterations {
        let sample = one(k)?;
        if k >= warmup {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// Checks a benchmark's own result: `Err("<what> = <got>, expected <want>")` when they differ.
pub fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("{what} = {got:?}, expected {want:?}")) }
}

/// `# start suite=S benchmark=B param=P workers=W` on stderr (before the case runs).
pub fn progress_start(case: &Case) {
    eprintln!("{}", start_line(case));
}

/// `# done ... workers=W median_ns_per_op=X median_cpu_ns_per_op=Y` on stderr (after it).
pub fn progress_done(outcome: &Outcome) {
    eprintln!("{}", done_line(outcome));
}

fn start_line(case: &Case) -> String {
    format!("# start suite={} benchmark={} param={} workers={}", case.suite, case.name, case.param, case.workers)
}

fn done_line(outcome: &Outcome) -> String {
    let case = &outcome.case;
    format!(
        "# done suite={} benchmark={} param={} workers={} median_ns_per_op={:.3} median_cpu_ns_per_op={:.3}",
        case.suite,
        case.name,
        case.param,
        case.workers,
        outcome.ns_per_op(),
        outcome.cpu_ns_per_op()
    )
}

/// Number of measured samples a case must produce.
pub fn expected_samples(case: &Case, constants: &Constants) -> u64 {
    if case.suite == "echo" { constants.echo_batches } else { constants.iterations }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ns: u64) -> Sample {
        Sample { elapsed_ns: ns, cpu_ns: 2 * ns, alloc_bytes: 8, alloc_count: 1, ..Default::default() }
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(vec![5, 1, 3]), 3);
        assert_eq!(median(vec![4, 1, 3, 2]), 2);
        assert_eq!(median(vec![3, 4]), 3);
        assert_eq!(median(vec![u64::MAX, u64::MAX]), u64::MAX);
        assert_eq!(median(vec![]), 0);
    }

    #[test]
    fn outcome_statistics() {
        let outcome = Outcome { case: Case::micro(1, "x", 4), samples: vec![sample(40), sample(80), sample(60)] };
        assert_eq!(outcome.median_ns(), 60);
        assert_eq!(outcome.min_ns(), 40);
        assert_eq!(outcome.ns_per_op(), 15.0);
        assert_eq!(outcome.median_cpu_ns(), 120);
        assert_eq!(outcome.cpu_ns_per_op(), 30.0);
        assert_eq!(outcome.bytes_per_op(), 2.0);
        assert_eq!(outcome.allocs_per_op(), 0.25);
    }

    #[test]
    fn repeat_discards_warmup_and_stops_on_failure() {
        let samples = repeat(2, 3, |k| Ok(sample(k + 1))).unwrap();
        assert_eq!(samples.iter().map(|s| s.elapsed_ns).collect::<Vec<_>>(), vec![3, 4, 5]);
        let failed = repeat(1, 3, |k| if k == 2 { Err("boom".to_string()) } else { Ok(sample(1)) });
        assert_eq!(failed.unwrap_err(), "boom");
    }

    #[test]
    fn keys_and_list_lines() {
        let mut case = Case::micro(1, "mutex", 10);
        assert_eq!(case.key(true), "mutex");
        assert_eq!(case.list_line(), "micro 1 mutex");
        case.param = "n=10".to_string();
        assert_eq!(case.key(true), "mutex[n=10]");
        assert_eq!(case.list_line(), "micro 1 mutex n=10");
        assert!(expect_eq("count", 1, 2).unwrap_err().contains("count = 1, expected 2"));
    }

    #[test]
    fn workers_per_tier_and_the_key_suffix_only_for_tier_3_4_in_a_sweep() {
        assert_eq!(Case::micro(0, "floor_cas_store", 1).workers, 0);
        assert_eq!(Case::micro(2, "watch", 1).workers, 0);
        assert_eq!(Case::echo("echo_f64", "n=1".into(), 1, 8).workers, 1);
        let spawn = Case::micro(4, "task_spawn", 1).with_workers(2);
        assert_eq!(spawn.workers, 2);
        assert!(spawn.swept() && !Case::micro(2, "watch", 1).swept() && !Case::echo("e", "n=1".into(), 1, 8).swept());
        assert_eq!(spawn.key(true), "task_spawn@w2");
        assert_eq!(spawn.key(false), "task_spawn");
        assert_eq!(Case::micro(1, "mutex", 1).key(true), "mutex");
    }

    #[test]
    fn progress_lines_name_the_benchmark_and_the_worker_count() {
        let spawn = Case::micro(4, "task_spawn", 1).with_workers(2);
        assert_eq!(start_line(&spawn), "# start suite=micro benchmark=task_spawn param= workers=2");
        let echo = Case::echo("echo_f64", "n=10".into(), 10, 8);
        assert_eq!(start_line(&echo), "# start suite=echo benchmark=echo_f64 param=n=10 workers=1");
        let sample = Sample { elapsed_ns: 100, cpu_ns: 250, alloc_bytes: 0, alloc_count: 0, ..Default::default() };
        assert_eq!(
            done_line(&Outcome { case: echo, samples: vec![sample] }),
            "# done suite=echo benchmark=echo_f64 param=n=10 workers=1 median_ns_per_op=10.000 median_cpu_ns_per_op=25.000"
        );
    }
}
