#!/usr/bin/env bash
# A many-core run of the Ampere lab, for a borrowed large machine (README "Measuring a large
# machine"). It is the run.sh of the bundle `python -m analysis bundle` builds: the benchmark
# programs (built for x86-64-v3), this script and the run.json pieces fixed at build time in
# meta/. It needs bash and coreutils only: no Python, no network, no compiler.
#
#   ./run.sh [--out DIR] [--cores N] [--invocations N] [--budget-s S] [--runtimes a,b,c]
#            [--timeout-s S] [--print-sweep] [--help]
#
# What it does, in the orchestrator's order (analysis/bench.py; data/README.md is the contract):
# 1. the worker sweep: 1, 2, 4, 8, ... up to the logical core count (ampere runs at most 64
#    workers, so at most 64), plus the count itself when it is not a power of two;
# 2. creates DIR/<YYYYmmddTHHMMSSZ-host>/ (an error if it exists);
# 3. warm-up: one discarded invocation of every runtime (micro suite, the sweep);
# 4. as many rounds of measured invocations as fit the time budget (the warm-up round's time
#    says how long a round takes), at most --invocations, at least 1; each round runs every
#    runtime once, the order rotated by one from round to round; each invocation under a
#    watchdog (--timeout-s);
# 5. merges each runtime's CSVs, copies invocation 0's meta.json, concatenates the metrics files,
#    writes run.json last. Any failure writes failed.json instead (exit 1); Ctrl-C / SIGTERM
#    too (exit 130 / 143). Bring the run folder home into data/runs/ and
#    `python -m analysis runs` validates it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
AMPERE_MAX_WORKERS=64
OUT="$HERE/runs"
CORES=""
MAX_INVOCATIONS=10
BUDGET_S=540
RUNTIMES="ampere,ampere.nospin,tokio"
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

IFS=',' read -r -a NAMES <<< "$RUNTIMES"
[[ ${#NAMES[@]} -ge 1 ]] || die "--runtimes: give at least one runtime"
for name in "${NAMES[@]}"; do
    [[ -f "$HERE/meta/variant.$name.json" ]] || die "--runtimes: unknown runtime '$name' (this bundle has: $(
        cd "$HERE/meta" && ls variant.*.json | sed 's/^variant\.//; s/\.json$//' | paste -sd, -))"
done

now_s() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.3f", b - a }'; }
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
program_of() { echo "$HERE/bin/${1%%.*}_bench"; }

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
    for name in "${NAMES[@]}"; do rm -f "$RUN/$name.csv" "$RUN/$name.meta.json" "$RUN/$name.metrics.jsonl"; done
    printf '{"run_id": "%s", "status": "failed", "step": "%s", "runtime": %s, "invocation": %s, "reason": "%s", "started_utc": "%s", "failed_utc": "%s"}\n' \
        "$RUN_ID" "$1" "${CURRENT_RT:+\"$CURRENT_RT\"}" "${CURRENT_K:-null}" "$(esc "$2")" "$STARTED_UTC" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" | sed 's/"runtime": ,/"runtime": null,/' > "$RUN/failed.json.tmp"
    mv "$RUN/failed.json.tmp" "$RUN/failed.json"
    echo "error: run $RUN_ID failed at step '$1'${CURRENT_RT:+ ($CURRENT_RT invocation ${CURRENT_K:-warm-up})}: $2 — see $RUN/failed.json" >&2
}
interrupted() { trap - INT TERM; fail interrupted "interrupted by $1"; exit "$2"; }
trap 'interrupted SIGINT 130' INT
trap 'interrupted SIGTERM 143' TERM

invoke() {  # invoke RUNTIME K WARMUP(0|1): one invocation; prints its elapsed seconds
    local rt=$1 k=$2 warm=$3 stem prog start rc
    stem=$([[ $warm == 1 ]] && echo "$rt.warmup" || echo "$rt.$k")
    prog=$(program_of "$rt")
    local cmd=("$prog" --variant "$rt" --suite micro --workers "$WORKERS" --invocation "$k"
               --csv "$STAGING/$stem.csv" --meta "$STAGING/$stem.meta.json")
    if [[ $warm == 0 && -f "$HERE/meta/metrics.${rt%%.*}" ]]; then cmd+=(--metrics "$STAGING/$stem.metrics.jsonl"); fi
    CURRENT_RT=$rt CURRENT_K=$([[ $warm == 1 ]] && echo "" || echo "$k")
    start=$(now_s)
    set +e
    timeout --signal=KILL "$TIMEOUT_S" "${cmd[@]}" > "$RUN/logs/$stem.stdout.txt" 2> "$RUN/logs/$stem.stderr.txt"
    rc=$?
    set -e
    if (( rc == 137 )); then fail "$CURRENT_STEP" "watchdog: no exit after $TIMEOUT_S s"; exit 1; fi
    if (( rc != 0 )); then
        fail "$CURRENT_STEP" "exit code $rc: $(grep -m1 '^error' "$RUN/logs/$stem.stderr.txt" || tail -n1 "$RUN/logs/$stem.stderr.txt")"
        exit 1
    fi
    [[ -s "$STAGING/$stem.csv" && -s "$STAGING/$stem.meta.json" ]] || { fail validate "$stem: no CSV or meta.json written"; exit 1; }
    since "$start"
}

echo "==> [run] $RUN_ID: ${CORES} logical cores, workers $WORKERS, runtimes $RUNTIMES, budget ${BUDGET_S} s"
WARMUP_ENTRIES=() ROUND_S=0
for rt in "${NAMES[@]}"; do
    s=$(invoke "$rt" 0 1)
    rm -f "$STAGING/$rt.warmup.csv" "$STAGING/$rt.warmup.meta.json"
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
        s=$(invoke "$rt" "$k" 0)
        ORDER_ENTRIES+=("{\"runtime\": \"$rt\", \"invocation\": $k, \"elapsed_s\": $s}")
        echo "    $rt $k: $s s"
    done
done

CURRENT_STEP=merge CURRENT_K=""
METRICS_ENTRIES=() RUNTIME_ENTRIES=() VARIANT_ENTRIES=() BINARY_ENTRIES=() WARNINGS=()
for rt in "${NAMES[@]}"; do
    CURRENT_RT=$rt
    { head -n1 "$STAGING/$rt.0.csv"; for (( k = 0; k < N; k++ )); do tail -n +2 "$STAGING/$rt.$k.csv"; done; } > "$RUN/$rt.csv.tmp"
    mv "$RUN/$rt.csv.tmp" "$RUN/$rt.csv"
    cp "$STAGING/$rt.0.meta.json" "$RUN/$rt.meta.json.tmp" && mv "$RUN/$rt.meta.json.tmp" "$RUN/$rt.meta.json"
    if [[ -f "$STAGING/$rt.0.metrics.jsonl" ]]; then
        for (( k = 0; k < N; k++ )); do cat "$STAGING/$rt.$k.metrics.jsonl"; done > "$RUN/$rt.metrics.jsonl.tmp"
        mv "$RUN/$rt.metrics.jsonl.tmp" "$RUN/$rt.metrics.jsonl"
        METRICS_ENTRIES+=("\"$rt\": \"$rt.metrics.jsonl\"")
    else
        METRICS_ENTRIES+=("\"$rt\": null")
    fi
    RUNTIME_ENTRIES+=("{\"name\": \"$rt\", \"versions\": $(cat "$HERE/meta/versions.${rt%%.*}.json")}")
    VARIANT_ENTRIES+=("\"$rt\": $(cat "$HERE/meta/variant.$rt.json")")
done
CURRENT_RT=""
for prog in $(for rt in "${NAMES[@]}"; do echo "${rt%%.*}"; done | sort -u); do
    BINARY_ENTRIES+=("\"$prog\": {\"path\": \"$(esc "$(program_of "$prog")")\", \"sha256\": \"$(sha256sum "$(program_of "$prog")" | cut -d' ' -f1)\"}")
done
(( N >= 5 )) || WARNINGS+=("\"only $N measured invocation(s) per runtime fitted the ${BUDGET_S} s budget (a published run has at least 5)\"")
join() { local IFS=","; echo "$*"; }
rm -rf "$STAGING"
ENDED_UTC=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cat > "$RUN/run.json.tmp" <<EOF
{
  "schema_version": 3, "run_id": "$RUN_ID", "status": "complete", "suites": ["micro"], "profile": "full",
  "constants": $(cat "$HERE/meta/constants.json"), "overrides": {},
  "constants_source": "runtime/bench/constants.json (embedded in the bundle's programs)",
  "filters": [], "runtimes": [$(join "${RUNTIME_ENTRIES[@]}")], "variants": {$(join "${VARIANT_ENTRIES[@]}")},
  "workers": [$WORKERS], "invocations": $N, "metrics_files": {$(join "${METRICS_ENTRIES[@]}")},
  "warmup": {"what": "one discarded invocation of every runtime before invocation 0", "discarded": true,
             "invocations": [$(join "${WARMUP_ENTRIES[@]}")]},
  "invocation_order": [$(join "${ORDER_ENTRIES[@]}")],
  "command_line": ["run.sh", "--cores", "$CORES", "--invocations", "$MAX_INVOCATIONS", "--budget-s", "$BUDGET_S",
                   "--runtimes", "$(esc "$RUNTIMES")"],
  "bench_commands": {}, "binaries": {$(join "${BINARY_ENTRIES[@]}")},
  "git": $(cat "$HERE/meta/git.json"), "bundle": $(cat "$HERE/meta/bundle.json"),
  "hostname": "$HOST", "timeout_s": $TIMEOUT_S,
  "started_utc": "$STARTED_UTC", "ended_utc": "$ENDED_UTC", "elapsed_s": $(since "$T0"),
  "warnings": [$(join "${WARNINGS[@]+"${WARNINGS[@]}"}")]
}
EOF
mv "$RUN/run.json.tmp" "$RUN/run.json"
echo "==> [run] complete in $(since "$T0") s: $RUN"
