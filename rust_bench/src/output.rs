//! Output formats: CSV rows, the summary JSON, the human table, the metadata JSON (with the
//! machine facts), and atomic file writes. The Zig side (runtime/bench/output.zig) writes the
//! same columns, keys and key order.

use std::fmt::Write as _;
use std::path::Path;

use crate::constants::Constants;
use crate::alloc::Span;
use crate::harness::Outcome;
use crate::variants::Variant;

/// Version of the data contract the CSV and meta.json follow (data/README.md).
pub const SCHEMA_VERSION: u64 = 2;

/// The CSV header of schema 2, in the contract's column order.
pub const CSV_HEADER: &str =
    "runtime,invocation,suite,tier,benchmark,param,iteration,ops,elapsed_ns,cpu_ns,workers,alloc_bytes,alloc_count";

/// A JSON value with ordered object keys (serde_json's map would sort them).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Int(u64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, Json)>),
    List(Vec<Json>),
}

impl Json {
    pub fn str(text: impl Into<String>) -> Json {
        Json::Str(text.into())
    }

    pub fn opt_str(text: Option<String>) -> Json {
        text.map(Json::Str).unwrap_or(Json::Null)
    }

    /// Pretty-printed with two-space indentation.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Json::Float(v) => out.push_str(&serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())),
            Json::Str(s) => out.push_str(&serde_json::to_string(s).expect("strings serialise")),
            Json::List(items) => {
                let parts: Vec<String> = items.iter().map(|i| i.render().trim_end().to_string()).collect();
                let _ = write!(out, "[{}]", parts.join(", "));
            }
            Json::Obj(fields) => {
                if fields.is_empty() {
                    out.push_str("{}");
                    return;
                }
                out.push_str("{\n");
                for (i, (key, value)) in fields.iter().enumerate() {
                    out.push_str(&"  ".repeat(depth + 1));
                    out.push_str(&serde_json::to_string(key).expect("strings serialise"));
                    out.push_str(": ");
                    value.write(out, depth + 1);
                    if i + 1 < fields.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&"  ".repeat(depth));
                out.push('}');
            }
        }
    }
}

pub fn constants_json(c: &Constants) -> Json {
    let mut fields: Vec<(String, Json)> = c.scalars().into_iter().map(|(k, v)| (k.to_string(), Json::Int(v))).collect();
    for (key, values) in c.lists() {
        fields.push((key.to_string(), Json::List(values.iter().map(|v| Json::Int(*v)).collect())));
    }
    Json::Obj(fields)
}

/// The variant's settings as a JSON object, in `KNOWN_SETTINGS` order.
pub fn settings_json(variant: &Variant) -> Json {
    Json::Obj(variant.settings().into_iter().map(|(name, value)| (name.to_string(), Json::Int(value))).collect())
}

/// The CSV text of all measured rows; `runtime` is the variant name (`tokio`, `tokio.x`).
pub fn csv(runtime: &str, invocation: u64, outcomes: &[Outcome]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for outcome in outcomes {
        let case = &outcome.case;
        for (iteration, s) in outcome.samples.iter().enumerate() {
            let _ = writeln!(
                out,
                "{runtime},{invocation},{},{},{},{},{iteration},{},{},{},{},{},{}",
                case.suite,
                case.tier,
                case.name,
                case.param,
                case.ops,
                s.elapsed_ns,
                s.cpu_ns,
                case.workers,
                s.alloc_bytes,
                s.alloc_count
            );
        }
    }
    out
}

/// The header of `<runtime>.span.csv` (data/README.md; the Zig side's `span_header`).
pub const SPAN_HEADER: &str = "runtime,invocation,suite,tier,benchmark,param,workers,iterations,ops,elapsed_ns,cpu_ns";

/// The span CSV: one row per case, its whole measured span (`Span`), keyed like the CSV rows.
pub fn span_csv(runtime: &str, invocation: u64, outcomes: &[Outcome]) -> String {
    let mut out = String::from(SPAN_HEADER);
    out.push('\n');
    for outcome in outcomes.iter().filter(|o| !o.samples.is_empty()) {
        let case = &outcome.case;
        let span = Span::of(&outcome.samples, case.ops);
        let _ = writeln!(
            out,
            "{runtime},{invocation},{},{},{},{},{},{},{},{},{}",
            case.suite, case.tier, case.name, case.param, case.workers, span.iterations, span.ops, span.elapsed_ns,
            span.cpu_ns
        );
    }
    out
}

/// Where the span CSV of `--csv PATH` goes: beside it, `X.csv` -> `X.span.csv` (a path not
/// ending in `.csv` gets `.span.csv` appended).
pub fn span_path(csv: &std::path::Path) -> std::path::PathBuf {
    let text = csv.to_string_lossy();
    let stem = text.strip_suffix(".csv").unwrap_or(&text);
    std::path::PathBuf::from(format!("{stem}.span.csv"))
}

/// The summary JSON (`--json`). `worker_counts` are the Tier 3–4 counts of the run; with
/// more than one, Tier 3–4 keys get an `@w<N>` suffix.
pub fn summary(
    variant: &Variant,
    profile: &str,
    invocation: u64,
    c: &Constants,
    worker_counts: &[u64],
    outcomes: &[Outcome],
) -> Json {
    let metadata = Json::Obj(vec![
        ("runtime".into(), Json::str(variant.runtime)),
        ("variant".into(), Json::str(variant.name.clone())),
        ("variant_settings".into(), settings_json(variant)),
        ("profile".into(), Json::str(profile)),
        ("invocation".into(), Json::Int(invocation)),
        ("workers".into(), Json::List(worker_counts.iter().map(|w| Json::Int(*w)).collect())),
        ("constants".into(), constants_json(c)),
    ]);
    let sweep = worker_counts.len() > 1;
    let benchmarks = outcomes
        .iter()
        .map(|o| {
            let entry = Json::Obj(vec![
                ("suite".into(), Json::str(o.case.suite)),
                ("tier".into(), Json::Int(o.case.tier as u64)),
                ("param".into(), Json::str(o.case.param.clone())),
                ("workers".into(), Json::Int(o.case.workers)),
                ("ns_per_op".into(), Json::Float(o.ns_per_op())),
                ("ops_per_sec".into(), Json::Float(o.ops_per_sec())),
                ("median_ns".into(), Json::Int(o.median_ns())),
                ("min_ns".into(), Json::Int(o.min_ns())),
                ("cpu_ns_per_op".into(), Json::Float(o.cpu_ns_per_op())),
                ("median_cpu_ns".into(), Json::Int(o.median_cpu_ns())),
                ("ops_per_iter".into(), Json::Int(o.case.ops)),
                ("bytes_per_op".into(), Json::Float(o.bytes_per_op())),
                ("allocs_per_op".into(), Json::Float(o.allocs_per_op())),
            ]);
            (o.case.key(sweep), entry)
        })
        .collect();
    Json::Obj(vec![("metadata".into(), metadata), ("benchmarks".into(), Json::Obj(benchmarks))])
}

/// The human table (default stdout).
pub fn table(runtime: &str, outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<6} {:>4}  {:<20} {:<12} {:>7} {:>14} {:>16} {:>14} {:>14} {:>14} {:>12} {:>10}",
        "suite",
        "tier",
        "benchmark",
        "param",
        "workers",
        "ns/op",
        "ops/sec",
        "median_ns",
        "min_ns",
        "cpu_ns/op",
        "B/op",
        "allocs/op"
    );
    for o in outcomes {
        let _ = writeln!(
            out,
            "{:<6} {:>4}  {:<20} {:<12} {:>7} {:>14.3} {:>16.0} {:>14} {:>14} {:>14.3} {:>12.3} {:>10.4}",
            o.case.suite,
            o.case.tier,
            o.case.name,
            o.case.param,
            o.case.workers,
            o.ns_per_op(),
            o.ops_per_sec(),
            o.median_ns(),
            o.min_ns(),
            o.cpu_ns_per_op(),
            o.bytes_per_op(),
            o.allocs_per_op()
        );
    }
    let _ = writeln!(out, "({} benchmarks, runtime {runtime})", outcomes.len());
    out
}

// -- metadata -------------------------------------------------------------------------------

/// Machine facts, read the same way by both programs: /proc/cpuinfo (`model name`, number of
/// `processor` lines), /proc/meminfo (`MemTotal`), /proc/sys/kernel/{hostname,osrelease}
/// (what `uname` reports), /etc/os-release (`PRETTY_NAME`). Unreadable facts are null.
pub fn machine() -> Json {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    let os_release = read("/etc/os-release").unwrap_or_default();
    let cores = cpuinfo.lines().filter(|l| field_name(l) == Some("processor")).count() as u64;
    Json::Obj(vec![
        ("hostname".into(), Json::opt_str(read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()))),
        ("arch".into(), Json::str(std::env::consts::ARCH)),
        ("cpu_model".into(), Json::opt_str(field_value(&cpuinfo, "model name"))),
        ("logical_cores".into(), if cores > 0 { Json::Int(cores) } else { Json::Null }),
        ("memory_bytes".into(), mem_total_bytes(&meminfo).map(Json::Int).unwrap_or(Json::Null)),
        ("kernel".into(), Json::opt_str(read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()))),
        ("os".into(), Json::opt_str(pretty_name(&os_release))),
    ])
}

/// `name` of a `name : value` line (/proc/cpuinfo style), trimmed.
fn field_name(line: &str) -> Option<&str> {
    line.split_once(':').map(|(name, _)| name.trim())
}

/// Value of the first `name : value` line whose name is `name`.
pub fn field_value(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find(|l| field_name(l) == Some(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, value)| value.trim().to_string())
}

/// `MemTotal:  24576000 kB` → bytes.
pub fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let value = field_value(meminfo, "MemTotal")?;
    let kib: u64 = value.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → the unquoted value.
pub fn pretty_name(os_release: &str) -> Option<String> {
    let line = os_release.lines().find(|l| l.starts_with("PRETTY_NAME="))?;
    let value = &line["PRETTY_NAME=".len()..];
    Some(value.trim().trim_matches('"').trim_matches('\'').to_string())
}

/// The metadata JSON (`--meta`).
pub fn meta(variant: &Variant) -> Json {
    let tokio_version = env!("TOKIO_BENCH_TOKIO_VERSION");
    let rustflags = env!("TOKIO_BENCH_RUSTFLAGS");
    let build_mode = if cfg!(debug_assertions) {
        "debug (NOT a release build)".to_string()
    } else {
        format!("release (opt-level=3, lto=fat, codegen-units=1, rustflags: {})",
                if rustflags.is_empty() { "none" } else { rustflags })
    };
    assert_eq!(variant.runtime, "tokio");
    Json::Obj(vec![
        ("schema_version".into(), Json::Int(SCHEMA_VERSION)),
        ("runtime".into(), Json::str(variant.runtime)),
        ("variant".into(), Json::str(variant.name.clone())),
        ("variant_settings".into(), settings_json(variant)),
        ("runtime_version".into(), Json::str(tokio_version)),
        ("compiler".into(), Json::str("rustc")),
        ("compiler_version".into(), Json::str(env!("TOKIO_BENCH_RUSTC_VERSION"))),
        ("tokio_version".into(), Json::str(tokio_version)),
        ("build_mode".into(), Json::str(&build_mode)),
        ("target_cpu".into(), Json::str(env!("TOKIO_BENCH_TARGET_CPU"))),
        ("allocator".into(), Json::str("glibc malloc via counting GlobalAlloc")),
        ("machine".into(), machine()),
    ])
}

// -- files ----------------------------------------------------------------------------------

/// Fails when `path` exists: results are never overwritten.
pub fn check_new(path: &Path) -> Result<(), String> {
    if path.exists() {
        return Err(format!("{} exists (results are never overwritten)", path.display()));
    }
    Ok(())
}

/// Writes `text` to `path` atomically: a temporary file in the same folder, then a rename.
/// Refuses to replace an existing file.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    check_new(path)?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| format!("{}: not a file path", path.display()))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::Sample;
    use crate::harness::Case;

    fn outcome() -> Outcome {
        outcome_of(Case::micro(1, "mutex", 10))
    }

    fn outcome_of(case: Case) -> Outcome {
        Outcome {
            case,
            samples: vec![
                Sample { elapsed_ns: 100, cpu_ns: 90, alloc_bytes: 0, alloc_count: 0, ..Default::default() },
                Sample { elapsed_ns: 120, cpu_ns: 130, alloc_bytes: 20, alloc_count: 2, ..Default::default() },
            ],
        }
    }

    fn variant(name: &str, values: [Option<u64>; 6]) -> Variant {
        Variant { name: name.to_string(), runtime: "tokio", values }
    }

    #[test]
    fn csv_header_is_schema_2_in_the_contracts_order() {
        assert_eq!(
            CSV_HEADER,
            "runtime,invocation,suite,tier,benchmark,param,iteration,ops,elapsed_ns,cpu_ns,workers,alloc_bytes,alloc_count"
        );
    }

    #[test]
    fn csv_has_header_and_one_row_per_sample_with_cpu_ns_and_workers() {
        let spawn = outcome_of(Case::micro(4, "task_spawn", 10).with_workers(2));
        let mut echo = outcome_of(Case::echo("echo_f64", "n=10".into(), 10, 8));
        echo.samples.truncate(1);
        let text = csv("tokio.x", 2, &[outcome(), spawn, echo]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            vec![
                CSV_HEADER,
                "tokio.x,2,micro,1,mutex,,0,10,100,90,0,0,0",
                "tokio.x,2,micro,1,mutex,,1,10,120,130,0,20,2",
                "tokio.x,2,micro,4,task_spawn,,0,10,100,90,2,0,0",
                "tokio.x,2,micro,4,task_spawn,,1,10,120,130,2,20,2",
                "tokio.x,2,echo,0,echo_f64,n=10,0,10,100,90,1,0,0",
            ]
        );
    }

    #[test]
    fn span_csv_has_one_row_per_case_from_the_first_start_to_the_last_stop() {
        let stamped = |elapsed_ns, cpu_ns, start_ns, start_cpu_ns| Sample {
            elapsed_ns, cpu_ns, start_ns, start_cpu_ns, stop_ns: start_ns + elapsed_ns, stop_cpu_ns: start_cpu_ns + cpu_ns,
            ..Default::default()
        };
        let mut spawn = outcome_of(Case::micro(4, "task_spawn", 10).with_workers(2));
        spawn.samples = vec![stamped(100, 90, 5000, 700), stamped(120, 130, 5400, 1200)];
        let mut echo = outcome_of(Case::echo("echo_f64", "n=10".into(), 10, 8));
        echo.samples = vec![stamped(100, 90, 5000, 700)];
        let text = span_csv("tokio", 3, &[spawn, echo]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, vec![SPAN_HEADER, "tokio,3,micro,4,task_spawn,,2,2,20,520,630", "tokio,3,echo,0,echo_f64,n=10,1,1,10,100,90"]);
        assert_eq!(span_path(Path::new("out/tokio.3.csv")), Path::new("out/tokio.3.span.csv"));
        assert_eq!(span_path(Path::new("results")), Path::new("results.span.csv"));
    }

    #[test]
    fn summary_is_valid_json_of_the_documented_shape() {
        let c = Constants::load("quick").unwrap();
        let v = variant("tokio.x", [None, None, None, Some(31), None, None]);
        let text = summary(&v, "quick", 0, &c, &[4], &[outcome()]).render();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["metadata"]["runtime"], "tokio");
        assert_eq!(v["metadata"]["variant"], "tokio.x");
        assert_eq!(v["metadata"]["variant_settings"], serde_json::json!({"global_queue_interval": 31}));
        assert_eq!(v["metadata"]["workers"], serde_json::json!([4]));
        assert_eq!(v["metadata"]["constants"]["echo_batch_sizes"], serde_json::json!([1, 10]));
        let m = &v["benchmarks"]["mutex"];
        assert_eq!(m["median_ns"], 110);
        assert_eq!(m["ns_per_op"], 11.0);
        assert_eq!(m["median_cpu_ns"], 110);
        assert_eq!(m["cpu_ns_per_op"], 11.0);
        assert_eq!(m["workers"], 0);
        assert_eq!(m["allocs_per_op"], 0.1);
        assert_eq!(m["param"], "");
    }

    #[test]
    fn summary_keys_get_the_worker_suffix_only_in_a_sweep() {
        let c = Constants::load("quick").unwrap();
        let base = variant("tokio", [None; 6]);
        let outcomes = [
            outcome(),
            outcome_of(Case::micro(4, "task_spawn", 10).with_workers(1)),
            outcome_of(Case::micro(4, "task_spawn", 10).with_workers(2)),
        ];
        let text = summary(&base, "quick", 0, &c, &[1, 2], &outcomes).render();
        // Keys in output order (serde_json's map would sort them): the depth-2 lines after "benchmarks".
        let benchmarks = text.split("\"benchmarks\": {").nth(1).unwrap();
        let keys: Vec<&str> =
            benchmarks.lines().filter(|l| l.starts_with("    \"")).map(|l| l.trim().split('"').nth(1).unwrap()).collect();
        assert_eq!(keys, vec!["mutex", "task_spawn@w1", "task_spawn@w2"]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["benchmarks"]["task_spawn@w2"]["workers"], 2);
        assert_eq!(v["metadata"]["variant_settings"], serde_json::json!({}));
        let single = summary(&base, "quick", 0, &c, &[2], &outcomes[2..]).render();
        assert!(single.contains("\"task_spawn\": {"), "{single}");
    }

    #[test]
    fn meta_is_valid_json_with_schema_version_variant_and_machine_facts() {
        let v: serde_json::Value = serde_json::from_str(&meta(&variant("tokio", [None; 6])).render()).unwrap();
        assert_eq!(v["schema_version"], 2);
        assert_eq!(v["runtime"], "tokio");
        assert_eq!(v["variant"], "tokio");
        assert_eq!(v["variant_settings"], serde_json::json!({}));
        assert!(v["tokio_version"].as_str().unwrap().starts_with("1."));
        assert!(v["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    }

    #[test]
    fn machine_fact_parsers() {
        assert_eq!(field_value("model name\t: Some CPU\nflags : x", "model name").unwrap(), "Some CPU");
        assert_eq!(mem_total_bytes("MemTotal:       1000 kB\n").unwrap(), 1_024_000);
        assert_eq!(pretty_name("NAME=x\nPRETTY_NAME=\"Debian 12\"\n").unwrap(), "Debian 12");
        assert!(pretty_name("NAME=x").is_none());
    }

    #[test]
    fn atomic_write_renames_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("tokio_bench_test_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.csv");
        let _ = std::fs::remove_file(&path);
        write_atomic(&path, "a,b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n");
        assert!(write_atomic(&path, "x\n").unwrap_err().contains("never overwritten"));
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
