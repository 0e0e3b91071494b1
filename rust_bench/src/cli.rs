//! Command line of both benchmark programs (runtime/bench/README.md, "Program interface").
//! Options take their value as the next argument or after `=` (`--suite=echo`).

use std::path::PathBuf;

pub const USAGE: &str = "\
usage: tokio_bench [--suite micro|echo|all] [--quick | --profile full|quick] [--filter SUBSTR]...
                   [--workers N] [--set KEY=VALUE]... [--invocation K]
                   [--csv PATH] [--meta PATH] [--json] [--list] [--help]

  --suite S          micro (default), echo or all
  --quick            the quick profile of constants.json (same as --profile quick)
  --profile P        constant profile: full (default) or quick
  --filter SUBSTR    only benchmarks whose name contains SUBSTR (repeatable: any of them)
  --workers N        same as --set num_workers=N
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    Micro,
    Echo,
    All,
}

impl Suite {
    pub fn includes(self, suite: &str) -> bool {
        match self {
            Suite::Micro => suite == "micro",
            Suite::Echo => suite == "echo",
            Suite::All => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub suite: Suite,
    pub profile: String,
    pub filters: Vec<String>,
    /// `KEY=VALUE` overrides in command-line order (`--workers N` becomes `num_workers=N`).
    pub overrides: Vec<String>,
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
            "--suite" | "--profile" | "--filter" | "--workers" | "--set" | "--invocation" | "--csv" | "--meta"
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
                    "all" => Suite::All,
                    other => return Err(format!("--suite: unknown suite '{other}' (micro, echo, all)")),
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
            "--workers" => {
                value.parse::<u64>().map_err(|_| format!("--workers: '{value}' is not an integer"))?;
                options.overrides.push(format!("num_workers={value}"));
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
            "--suite all --quick --filter mutex --filter=echo --workers 2 --set sync_ops=5 --invocation 3 \
             --csv out.csv --meta=m.json --json --list --help",
        ))
        .unwrap();
        assert_eq!(o.suite, Suite::All);
        assert_eq!(o.profile, "quick");
        assert_eq!(o.filters, vec!["mutex", "echo"]);
        assert_eq!(o.overrides, vec!["num_workers=2", "sync_ops=5"]);
        assert_eq!(o.invocation, 3);
        assert_eq!(o.csv.unwrap(), PathBuf::from("out.csv"));
        assert_eq!(o.meta.unwrap(), PathBuf::from("m.json"));
        assert!(o.json && o.list && o.help);
        assert_eq!(parse(&args("--profile quick")).unwrap().profile, "quick");
        assert_eq!(parse(&args("--set=echo_batch_sizes=1,2")).unwrap().overrides, vec!["echo_batch_sizes=1,2"]);
    }

    #[test]
    fn errors() {
        for (line, needle) in [
            ("--suite nope", "unknown suite"),
            ("--profile fast", "unknown profile"),
            ("--invocation -1", "not a non-negative integer"),
            ("--workers x", "not an integer"),
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
