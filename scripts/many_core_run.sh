#!/usr/bin/env bash
# A many-core run of the Ampere lab, for a borrowed large machine (README "Measuring a large
# machine"). It is the run.sh of the bundle `python -m analysis bundle` builds: the benchmark
# programs (built for x86-64-v3), this script and the run.json pieces fixed at build time in
# meta/. It needs bash and coreutils only: no Python, no network, no compiler.
#
#   ./run.sh [--out DIR] [--cores N] [--suites micro,io] [--runtimes a,b,c] [--invocations N]
#            [--budget-s S] [--timeout-s S] [--print-sweep] [--help]
#
# What it does, in the orchestrator's order (analysis/bench.py; data/README.md is the contract):
# 1. the worker sweep: 1, 2, 4, 8, ... up to the logical core count (ampere runs at most 64
#    workers, so at most 64), plus the count itself when it is not a power of two;
# 2. creates DIR/<YYYYmmddTHHMMSSZ-host>/ (an error if it exists);
# 3. warm-up: one discarded invocation of every runtime (the suites, the sweep);
# 4. as many rounds of measured invocations as fit the time budget (the warm-up round's time
#    says how long a round takes), at most --invocations, at least 1; each round runs every
#    runtime once, the order rotated by one from round to round. An invocation of a runtime is
#    one process per suite it runs (meta/suites.<runtime>: ampere_bench and tokio_bench run
#    micro and io, the std.Io programs io only), each under a watchdog (--timeout-s); the odd
#    invocations (the only one when there is one) record runtime metrics where the program
#    takes --metrics, as the orchestrator's records_metrics says;
# 5. merges each runtime's CSVs, span files and metrics files over invocations and suites,
#    copies invocation 0's meta.json, writes run.json last. Any failure writes failed.json
#    instead (exit 1); Ctrl-C / SIGTERM too (exit 130 / 143). Bring the run folder home into
#    data/runs/ and `python -m analysis runs` validates it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
AMPERE_MAX_WORKERS=64
OUT="$HERE/runs"
CORES=""
MAX_INVOCATIONS=10
BUDGET_S=540
RUNTIMES=""
SUITES=""
TIMEOUT_S=240
PRINT_SWEEP=0

usage() {
    sed -n '7,8p' "$0" | sed 's/^# *//'
}

die() { echo "error: run.sh: $*" >&2; exit 2; }

positive() {  # positive NAME VALUE
    [[ "$2" =~ ^[1-9][0-9]{0,6}$ ]] || die "$1: expected a positive integer, got '$2'"
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) [[ $# -ge 2 ]] || die "--out: missing value"; OUT="$2"; shift 2 ;;
        --cores) [[ $# -ge 2 ]] || die "--cores: missing value"; positive --cores "$2"; CORES="$2"; shift 2 ;;
        --invocations) [[ $# -ge 2 ]] || die "--invocations: missing value"; positive --invocations "$2"
                       MAX_INVOCATIONS="$2"; shift 2 ;;
        --budget-s) [[ $# -ge 2 ]] || die "--budget-s: missing value"; positive --budget-s "$2"; BUDGET_S="$2"; shift 2 ;;
        --timeout-s) [[ $# -ge 2 ]] || die "--timeout-s: missing value"; positive --timeout-s "$2"; TIMEOUT_S="$2"; shift 2 ;;
        --runtimes) [[ $# -ge 2 ]] || die "--runtimes: missing value"; RUNTIMES="$2"; shift 2 ;;
        --suites) [[ $# -ge 2 ]] || die "--suites: missing value"; SUITES="$2"; shift 2 ;;
        --print-sweep) PRINT_SWEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

[[ -n "$CORES" ]] || CORES=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
positive "logical cores" "$CORES"

sweep() {  # the worker counts for $1 logical cores, comma-separated
    local cap=$1 w=1 list=""
    (( cap > AMPERE_MAX_WORKERS )) && cap=$AMPERE_MAX_WORKERS
    while (( w <= cap )); do list+="${list:+,}$w"; w=$(( w * 2 )); done
    (( (cap & (cap - 1)) != 0 )) && list+=",$cap"
    echo "$list"
}
WORKERS=$(sweep "$CORES")
if (( PRINT_SWEEP )); then echo "$WORKERS"; exit 0; fi

# meta/runtimes: the bundle's runtimes in their default order, one per line; meta/suites.<rt>:
# the suites its program runs (space-separated); meta/program.<rt>: its program's name in bin/.
[[ -f "$HERE/meta/runtimes" ]] || die "$HERE/meta/runtimes: missing (not a bundle folder?)"
BUNDLED=$(paste -sd, "$HERE/meta/runtimes")
suites_of() { cat "$HERE/meta/suites.$1"; }
in_list() {  # in_list ITEM A,B,C
    [[ ",$2," == *",$1,"* ]]
}
if [[ -z "$SUITES" ]]; then  # every suite some runtime of the bundle runs, micro first
    SUITES=$(for s in micro io; do
                 for rt in ${BUNDLED//,/ }; do [[ " $(suites_of "$rt") " == *" $s "* ]] && { echo "$s"; break; }; done
             done | paste -sd, -)
fi
IFS=',' read -r -a SUITE_LIST <<< "$SUITES"
[[ ${#SUITE_LIST[@]} -ge 1 ]] || die "--suites: give at least one suite"
for s in "${SUITE_LIST[@]}"; do
    [[ "$s" == micro || "$s" == io ]] || die "--suites: unknown suite '$s' (a bundle runs micro and io)"
done
my_suites() {  # the requested suites runtime $1 runs, space-separated, in the requested order
    local s out=""
    for s in "${SUITE_LIST[@]}"; do
        if [[ " $(suites_of "$1") " == *" $s "* ]]; then out+="${out:+ }$s"; fi
    done
    echo "$out"
}
if [[ -z "$RUNTIMES" ]]; then
    RUNTIMES=$(for rt in ${BUNDLED//,/ }; do [[ -n "$(my_suites "$rt")" ]] && echo "$rt"; done | paste -sd, -)
fi
IFS=',' read -r -a NAMES <<< "$RUNTIMES"
[[ ${#NAMES[@]} -ge 1 ]] || die "--runtimes: give at least one runtime"
for name in "${NAMES[@]}"; do
    in_list "$name" "$BUNDLED" || die "--runtimes: unknown runtime '$name' (this bundle has: $BUNDLED)"
    [[ -n "$(my_suites "$name")" ]] || die "--runtimes: $name runs none of the suites $SUITES (it runs: $(suites_of "$name"))"
done

now_s() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.3f", b - a }'; }
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
program_name() { cat "$HERE/meta/program.$1"; }
program_of() { echo "$HERE/bin/$(program_name "$1")"; }

HOST=$(hostname -s 2>/dev/null || hostname)
HOST=$(printf '%s' "$HOST" | tr -c 'A-Za-z0-9._-' '-')
STARTED_UTC=$(date -u +%Y-%m-%dT%H:%M:%SZ)
RUN_ID="$(date -u -d "$STARTED_UTC" +%Y%m%dT%H%M%SZ 2>/dev/null || date -u +%Y%m%dT%H%M%SZ)-$HOST"
T0=$(now_s)
mkdir -p "$OUT"
RUN="$OUT/$RUN_ID"
mkdir "$RUN" 2>/dev/null || die "$RUN: exists or cannot be created (a run folder is never written twice)"
STAGING="$RUN/.staging"
mkdir -p "$STAGING" "$RUN/logs"

CURRENT_RT="" CURRENT_K="" CURRENT_STEP="warm-up"
fail() {  # fail STEP REASON: failed.json instead of run.json, exit 1
    rm -rf "$STAGING"
    for name in "${NAMES[@]}"; do
        rm -f "$RUN/$name.csv" "$RUN/$name.meta.json" "$RUN/$name.metrics.jsonl" "$RUN/$name.span.csv"
    done
    printf '{"run_id": "%s", "status": "failed", "step": "%s", "runtime": %s, "invocation": %s, "reason": "%s", "started_utc": "%s", "failed_utc": "%s"}\n' \
        "$RUN_ID" "$1" "${CURRENT_RT:+\"$CURRENT_RT\"}" "${CURRENT_K:-null}" "$(esc "$2")" "$STARTED_UTC" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" | sed 's/"runtime": ,/"runtime": null,/' > "$RUN/failed.json.tmp"
    mv "$RUN/failed.json.tmp" "$RUN/failed.json"
    echo "error: run $RUN_ID failed at step '$1'${CURRENT_RT:+ ($CURRENT_RT invocation ${CURRENT_K:-warm-up})}: $2 — see $RUN/failed.json" >&2
}
interrupted() { trap - INT TERM; fail interrupted "interrupted by $1"; exit "$2"; }
trap 'interrupted SIGINT 130' INT
trap 'interrupted SIGTERM 143' TERM

records_metrics() {  # records_metrics K N: the orchestrator's rule (bench.records_metrics)
    (( $1 % 2 == 1 || $2 == 1 ))
}

invoke() {  # invoke RUNTIME K WARMUP(0|1) METRICS(0|1): one invocation, a process per suite; prints its seconds
    local rt=$1 k=$2 warm=$3 metrics=$4 stem prog start rc suite part
    stem=$([[ $warm == 1 ]] && echo "$rt.warmup" || echo "$rt.$k")
    prog=$(program_of "$rt")
    CURRENT_RT=$rt CURRENT_K=$([[ $warm == 1 ]] && echo "" || echo "$k")
    start=$(now_s)
    for suite in $(my_suites "$rt"); do
        part="$stem.$suite"
        local cmd=("$prog" --variant "$rt" --suite "$suite" --workers "$WORKERS" --invocation "$k"
                   --csv "$STAGING/$part.csv" --meta "$STAGING/$part.meta.json")
        if [[ $warm == 0 && $metrics == 1 && -f "$HERE/meta/metrics.$(program_name "$rt")" ]]; then
            cmd+=(--metrics "$STAGING/$part.metrics.jsonl")
        fi
        set +e
        timeout --signal=KILL "$TIMEOUT_S" "${cmd[@]}" > "$RUN/logs/$part.stdout.txt" 2> "$RUN/logs/$part.stderr.txt"
        rc=$?
        set -e
        if (( rc == 137 )); then fail "$CURRENT_STEP" "$suite suite: watchdog: no exit after $TIMEOUT_S s"; exit 1; fi
        if (( rc != 0 )); then
            fail "$CURRENT_STEP" "$suite suite: exit code $rc: $(grep -m1 '^error' "$RUN/logs/$part.stderr.txt" ||
                                                                 tail -n1 "$RUN/logs/$part.stderr.txt")"
            exit 1
        fi
        [[ -s "$STAGING/$part.csv" && -s "$STAGING/$part.meta.json" ]] ||
            { fail validate "$part: no CSV or meta.json written"; exit 1; }
    done
    since "$start"
}

echo "==> [run] $RUN_ID: ${CORES} logical cores, workers $WORKERS, suites $SUITES, runtimes $RUNTIMES, budget ${BUDGET_S} s"
WARMUP_ENTRIES=() ROUND_S=0
for rt in "${NAMES[@]}"; do
    s=$(invoke "$rt" 0 1 0)
    rm -f "$STAGING/$rt.warmup."*
    WARMUP_ENTRIES+=("{\"runtime\": \"$rt\", \"elapsed_s\": $s}")
    ROUND_S=$(awk -v a="$ROUND_S" -v b="$s" 'BEGIN { print a + b }')
    echo "    warm-up $rt: $s s"
done
LEFT=$(awk -v b="$BUDGET_S" -v u="$(since "$T0")" 'BEGIN { print b - u }')
N=$(awk -v left="$LEFT" -v r="$ROUND_S" -v m="$MAX_INVOCATIONS" \
    'BEGIN { n = (r > 0) ? int(left / (r * 1.1)) : m; if (n > m) n = m; if (n < 1) n = 1; print n }')
echo "==> [run] a round takes about $ROUND_S s: $N measured invocation(s) per runtime"

CURRENT_STEP=invocation
ORDER_ENTRIES=()
for (( k = 0; k < N; k++ )); do
    for (( i = 0; i < ${#NAMES[@]}; i++ )); do
        rt=${NAMES[$(( (i + k) % ${#NAMES[@]} ))]}
        m=0; if records_metrics "$k" "$N"; then m=1; fi
        s=$(invoke "$rt" "$k" 0 "$m")
        ORDER_ENTRIES+=("{\"runtime\": \"$rt\", \"invocation\": $k, \"elapsed_s\": $s}")
        echo "    $rt $k: $s s"
    done
done

parts() {  # parts RUNTIME SUFFIX: the staging files of every invocation and suite, in order
    local rt=$1 suffix=$2 k suite
    for (( k = 0; k < N; k++ )); do
        for suite in $(my_suites "$rt"); do echo "$STAGING/$rt.$k.$suite$suffix"; done
    done
}
concat_csv() {  # concat_csv TARGET FILE...: the first file's header, then every file's rows
    local target=$1; shift
    { head -n1 "$1"; for f in "$@"; do tail -n +2 "$f"; done; } > "$target.tmp"
    mv "$target.tmp" "$target"
}

CURRENT_STEP=merge CURRENT_K=""
METRICS_ENTRIES=() RUNTIME_ENTRIES=() VARIANT_ENTRIES=() BINARY_ENTRIES=() WARNINGS=()
for rt in "${NAMES[@]}"; do
    CURRENT_RT=$rt
    mapfile -t CSVS < <(parts "$rt" .csv)
    concat_csv "$RUN/$rt.csv" "${CSVS[@]}"
    cp "${CSVS[0]%.csv}.meta.json" "$RUN/$rt.meta.json.tmp" && mv "$RUN/$rt.meta.json.tmp" "$RUN/$rt.meta.json"
    mapfile -t SPANS < <(parts "$rt" .span.csv)
    HAVE=0; for f in "${SPANS[@]}"; do if [[ -f "$f" ]]; then HAVE=$(( HAVE + 1 )); fi; done
    if (( HAVE == ${#SPANS[@]} )); then
        concat_csv "$RUN/$rt.span.csv" "${SPANS[@]}"
    elif (( HAVE > 0 )); then
        WARNINGS+=("\"$rt: only $HAVE of ${#SPANS[@]} invocation processes wrote a span file; the run has no $rt.span.csv\"")
    fi
    mapfile -t METRICS < <(parts "$rt" .metrics.jsonl)
    WROTE=(); for f in "${METRICS[@]}"; do if [[ -f "$f" ]]; then WROTE+=("$f"); fi; done
    if (( ${#WROTE[@]} > 0 )); then
        cat "${WROTE[@]}" > "$RUN/$rt.metrics.jsonl.tmp"
        mv "$RUN/$rt.metrics.jsonl.tmp" "$RUN/$rt.metrics.jsonl"
        METRICS_ENTRIES+=("\"$rt\": \"$rt.metrics.jsonl\"")
    else
        METRICS_ENTRIES+=("\"$rt\": null")
    fi
    RUNTIME_ENTRIES+=("{\"name\": \"$rt\", \"versions\": $(cat "$HERE/meta/versions.$(program_name "$rt").json")}")
    VARIANT_ENTRIES+=("\"$rt\": $(cat "$HERE/meta/variant.$rt.json")")
done
CURRENT_RT=""
for prog in $(for rt in "${NAMES[@]}"; do program_name "$rt"; echo; done | sort -u); do
    BINARY_ENTRIES+=("\"$prog\": {\"path\": \"$(esc "$HERE/bin/$prog")\", \"sha256\": \"$(sha256sum "$HERE/bin/$prog" | cut -d' ' -f1)\"}")
done
(( N >= 5 )) || WARNINGS+=("\"only $N measured invocation(s) per runtime fitted the ${BUDGET_S} s budget (a published run has at least 5)\"")
join() { local IFS=","; echo "$*"; }
quoted() { local s out=""; for s in "$@"; do out+="${out:+, }\"$s\""; done; echo "$out"; }
rm -rf "$STAGING"
ENDED_UTC=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cat > "$RUN/run.json.tmp" <<EOF
{
  "schema_version": 3, "run_id": "$RUN_ID", "status": "complete", "suites": [$(quoted "${SUITE_LIST[@]}")],
  "profile": "full", "constants": $(cat "$HERE/meta/constants.json"), "overrides": {},
  "constants_source": "runtime/bench/constants.json (embedded in the bundle's programs)",
  "filters": [], "runtimes": [$(join "${RUNTIME_ENTRIES[@]}")], "variants": {$(join "${VARIANT_ENTRIES[@]}")},
  "workers": [$WORKERS], "invocations": $N, "metrics_files": {$(join "${METRICS_ENTRIES[@]}")},
  "warmup": {"what": "one discarded invocation of every runtime before invocation 0", "discarded": true,
             "invocations": [$(join "${WARMUP_ENTRIES[@]}")]},
  "invocation_order": [$(join "${ORDER_ENTRIES[@]}")],
  "invocation_processes": "one per suite: a runtime's invocation K ran each of its suites in its own process",
  "command_line": ["run.sh", "--cores", "$CORES", "--suites", "$(esc "$SUITES")", "--invocations", "$MAX_INVOCATIONS",
                   "--budget-s", "$BUDGET_S", "--runtimes", "$(esc "$RUNTIMES")"],
  "bench_commands": {}, "binaries": {$(join "${BINARY_ENTRIES[@]}")},
  "git": $(cat "$HERE/meta/git.json"), "bundle": $(cat "$HERE/meta/bundle.json"),
  "hostname": "$HOST", "timeout_s": $TIMEOUT_S,
  "started_utc": "$STARTED_UTC", "ended_utc": "$ENDED_UTC", "elapsed_s": $(since "$T0"),
  "warnings": [$(join "${WARNINGS[@]+"${WARNINGS[@]}"}")]
}
EOF
mv "$RUN/run.json.tmp" "$RUN/run.json"
echo "==> [run] complete in $(since "$T0") s: $RUN"
