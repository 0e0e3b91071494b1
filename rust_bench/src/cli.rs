//! Command line of both benchmark programs (runtime/bench/README.md, "Program interface").
//! Options take their value as the next argument or after `=` (`--suite=echo`).

use std::path::PathBuf;

pub const USAGE: &str = "\
usage: tokio_bench [--suite micro|echo|net|io|all] [--quick | --profile full|quick] [--filter SUBSTR]...
                   [--workers N[,N...]] [--variant NAME] [--set KEY=VALUE]... [--invocation K]
                   [--csv PATH] [--meta PATH] [--json] [--list] [--help]

  --suite S          micro (default), echo, net, io or all
  --quick            the quick profile of constants.json (same as --profile quick)
  --profile P        constant profile: full (default) or quick
  --filter SUBSTR    only benchmarks whose name contains SUBSTR (repeatable: any of them)
  --workers N,...    worker counts of Tiers 3-4, run in this order, a fresh runtime each
                     (default: num_workers); other tiers run once
  --variant NAME     runtime variant of variants.json (default: tokio)
  --set KEY=VALUE    override one constant (comma-separated integers for list keys)
  --invocation K     value of the CSV invocation column (default 0)
  --csv PATH         write measured rows to PATH (atomically; PATH must not exist)
  --meta PATH        write the metadata JSON to PATH (atomically; PATH must not exist)
  --json             print the summary JSON instead of the table
  --list             print `suite tier benchmark param` per selected benchmark and exit
  --help             this text

exit codes: 0 success, 1 a benchmark failed its own check (or results could not be written),
2 bad command line
";

/// Most worker counts in one `--workers` list (the Zig side's `worker_counts_max`).
pub const WORKER_COUNTS_MAX: usize = 16;
/// Largest worker count `--workers` accepts (a sanity bound, the same on both sides).
pub const WORKER_COUNT_MAX: u64 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    Micro,
    Echo,
    Net,
    Io,
    All,
}

impl Suite {
    pub fn includes(self, suite: &str) -> bool {
        match self {
            Suite::Micro => suite == "micro",
            Suite::Echo => suite == "echo",
            Suite::Net => suite == "net",
            Suite::Io => suite == "io",
            Suite::All => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub suite: Suite,
    pub profile: String,
    pub filters: Vec<String>,
    /// `--set KEY=VALUE` overrides in command-line order.
    pub overrides: Vec<String>,
    /// `--workers`, in command-line order; `None`: Tiers 3–4 run once at `num_workers`.
    pub workers: Option<Vec<u64>>,
    /// `--variant`; `None`: the program's own base runtime name.
    pub variant: Option<String>,
    pub invocation: u64,
    pub csv: Option<PathBuf>,
    pub meta: Option<PathBuf>,
    pub json: bool,
    pub list: bool,
    pub help: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            suite: Suite::Micro,
            profile: "full".to_string(),
            filters: Vec::new(),
            overrides: Vec::new(),
            workers: None,
            variant: None,
            invocation: 0,
            csv: None,
            meta: None,
            json: false,
            list: false,
            help: false,
        }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let takes_value = matches!(
            flag,
            "--suite" | "--profile" | "--filter" | "--workers" | "--variant" | "--set" | "--invocation" | "--csv" | "--meta"
        );
        let value = if takes_value {
            match inline {
                Some(v) => v,
                None => {
                    let v = args.get(i).ok_or_else(|| format!("{flag} needs a value"))?;
                    i += 1;
                    v.clone()
                }
            }
        } else {
            if inline.is_some() {
                return Err(format!("{flag} takes no value"));
            }
            String::new()
        };
        match flag {
            "--suite" => {
                options.suite = match value.as_str() {
                    "micro" => Suite::Micro,
                    "echo" => Suite::Echo,
                    "net" => Suite::Net,
                    "io" => Suite::Io,
                    "all" => Suite::All,
                    other => return Err(format!("--suite: unknown suite '{other}' (micro, echo, net, io, all)")),
                }
            }
            "--quick" => options.profile = "quick".to_string(),
            "--profile" => {
                if value != "full" && value != "quick" {
                    return Err(format!("--profile: unknown profile '{value}' (full, quick)"));
                }
                options.profile = value;
            }
            "--filter" => {
                if value.is_empty() {
                    return Err("--filter needs a non-empty substring".to_string());
                }
                options.filters.push(value);
            }
            "--workers" => options.workers = Some(parse_worker_counts(&value)?),
            "--variant" => {
                if value.is_empty() {
                    return Err("--variant needs a name".to_string());
                }
                options.variant = Some(value);
            }
            "--set" => options.overrides.push(value),
            "--invocation" => {
                options.invocation =
                    value.parse().map_err(|_| format!("--invocation: '{value}' is not a non-negative integer"))?;
            }
            "--csv" => options.csv = Some(non_empty_path(flag, value)?),
            "--meta" => options.meta = Some(non_empty_path(flag, value)?),
            "--json" => options.json = true,
            "--list" => options.list = true,
            "--help" | "-h" => options.help = true,
            other => return Err(format!("unknown argument '{other}' (see --help)")),
        }
    }
    Ok(options)
}

/// Parses `N[,N...]`: distinct counts in 1..=WORKER_COUNT_MAX, at most WORKER_COUNTS_MAX.
pub fn parse_worker_counts(text: &str) -> Result<Vec<u64>, String> {
    let mut counts: Vec<u64> = Vec::new();
    for part in text.split(',') {
        // Digits only, like the Zig side (`parse` alone would take `+1`).
        let parsed = if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) { part.parse::<u64>().ok() } else { None };
        let count =
            parsed.ok_or_else(|| format!("--workers: '{text}' is not a list of positive integers (e.g. 1,2,4)"))?;
        if count == 0 || count > WORKER_COUNT_MAX {
            return Err(format!("--workers: {count} is outside 1..{WORKER_COUNT_MAX}"));
        }
        if counts.contains(&count) {
            return Err(format!("--workers: {count} is given twice"));
        }
        if counts.len() == WORKER_COUNTS_MAX {
            return Err(format!("--workers: more than {WORKER_COUNTS_MAX} counts"));
        }
        counts.push(count);
    }
    Ok(counts)
}

fn non_empty_path(flag: &str, value: String) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err(format!("{flag} needs a path"));
    }
    Ok(PathBuf::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        assert_eq!(o, Options::default());
        assert_eq!(o.suite, Suite::Micro);
        assert_eq!(o.profile, "full");
    }

    #[test]
    fn every_flag() {
        let o = parse(&args(
            "--suite all --quick --filter mutex --filter=echo --workers 2 --set sync_ops=5 --variant tokio.x \
             --invocation 3 --csv out.csv --meta=m.json --json --list --help",
        ))
        .unwrap();
        assert_eq!(o.suite, Suite::All);
        assert_eq!(o.profile, "quick");
        assert_eq!(o.filters, vec!["mutex", "echo"]);
        assert_eq!(o.overrides, vec!["sync_ops=5"]);
        assert_eq!(o.workers, Some(vec![2]));
        assert_eq!(o.variant.as_deref(), Some("tokio.x"));
        assert_eq!(o.invocation, 3);
        assert_eq!(o.csv.unwrap(), PathBuf::from("out.csv"));
        assert_eq!(o.meta.unwrap(), PathBuf::from("m.json"));
        assert!(o.json && o.list && o.help);
        assert_eq!(parse(&args("--profile quick")).unwrap().profile, "quick");
        let p = parse(&args("--set=echo_batch_sizes=1,2")).unwrap();
        assert_eq!(p.overrides, vec!["echo_batch_sizes=1,2"]);
        assert!(p.workers.is_none() && p.variant.is_none());
    }

    #[test]
    fn worker_lists_keep_their_order_and_the_last_one_wins() {
        assert_eq!(parse(&args("--workers 4,1,2")).unwrap().workers, Some(vec![4, 1, 2]));
        assert_eq!(parse(&args("--workers=1,2 --workers 8")).unwrap().workers, Some(vec![8]));
        let many = parse(&args("--workers 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,1024")).unwrap();
        assert_eq!(many.workers.unwrap().len(), WORKER_COUNTS_MAX);
    }

    #[test]
    fn errors() {
        for (line, needle) in [
            ("--suite nope", "unknown suite"),
            ("--profile fast", "unknown profile"),
            ("--invocation -1", "not a non-negative integer"),
            ("--workers x", "not a list of positive integers"),
            ("--workers 1,,2", "not a list of positive integers"),
            ("--workers 1,2,", "not a list of positive integers"),
            ("--workers -1", "not a list of positive integers"),
            ("--workers +1", "not a list of positive integers"),
            ("--workers 99999999999999999999999", "not a list of positive integers"),
            ("--workers 0", "0 is outside 1..1024"),
            ("--workers 1025", "1025 is outside 1..1024"),
            ("--workers 2,4,2", "2 is given twice"),
            ("--workers 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16 counts"),
            ("--workers", "needs a value"),
            ("--variant", "needs a value"),
            ("--variant=", "needs a name"),
            ("--csv", "needs a value"),
            ("--bogus", "unknown argument"),
            ("--json=1", "takes no value"),
            ("positional", "unknown argument"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(needle), "{line}: {err}");
        }
    }
}
