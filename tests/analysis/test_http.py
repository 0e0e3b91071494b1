"""The http suite: wrk's report, the sample and request-count checks, the latency files and
their loader, the orchestrator's fault paths (fake server and fake wrk), the results module."""

from __future__ import annotations

import io
import json
import shutil

import pandas as pd
import pytest

from analysis import httpbench, httpsuite, schema
from analysis.errors import DataError
from analysis.http_csv import match_rows, read_http_csv
from analysis.load import load_run
from http_fakes import FAKE_OHA, FAKE_SERVER, FAKE_WRK, install, write_http_run, write_latency

REPORT = {"requests": 1234, "duration_us": 2_000_000, "bytes": 99,
          "errors": {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0},
          "latency_us": {"p50": 100, "p90": 200, "p99": 300, "p999": 400, "max": 500}}


def wrk_text(report=REPORT, prefix="Running 2s test @ http://127.0.0.1:1/plaintext\n"):
    return prefix + httpbench.WRK_MARK + json.dumps(report) + "\n"


# -- wrk's report ------------------------------------------------------------------------------

def test_parse_wrk_output_reads_the_done_line():
    report = httpbench.parse_wrk_output(wrk_text())
    assert report.requests == 1234 and report.duration_us == 2_000_000
    assert report.latency_us == {"p50": 100, "p90": 200, "p99": 300, "p999": 400, "max": 500}
    assert report.socket_errors == 0 and report.non_2xx == 0
    assert httpbench.sample_problem(report) is None


@pytest.mark.parametrize("text, needle", [
    ("Running 2s test\n", "0 report lines"),
    (wrk_text() + wrk_text(prefix=""), "2 report lines"),
    (httpbench.WRK_MARK + "{not json\n", "unreadable"),
    (wrk_text({k: v for k, v in REPORT.items() if k != "latency_us"}), "unreadable"),
    (wrk_text({**REPORT, "duration_us": 0}), "out of range"),
])
def test_parse_wrk_output_fails_the_sample_on_a_bad_report(text, needle):
    with pytest.raises(httpbench.SampleFailed, match=needle):
        httpbench.parse_wrk_output(text)


@pytest.mark.parametrize("errors, needle", [
    ({"read": 3, "timeout": 1}, "socket errors (read 3, timeout 1)"),
    ({"connect": 16}, "socket errors (connect 16)"),
    ({"status": 5}, "5 non-2xx responses"),
])
def test_a_sample_with_socket_errors_or_non_2xx_fails(errors, needle):
    report = httpbench.parse_wrk_output(wrk_text({**REPORT, "errors": {**REPORT["errors"], **errors}}))
    assert httpbench.sample_problem(report) == needle


def test_a_sample_without_requests_fails():
    assert httpbench.sample_problem(httpbench.parse_wrk_output(wrk_text({**REPORT, "requests": 0}))) == \
        "no request completed"


def test_wrk_script_prints_every_field_the_parser_reads():
    for name in ("summary.requests", "summary.duration", "e.connect", "e.read", "e.write", "e.status", "e.timeout",
                 "latency:percentile(99.9)", "latency:percentile(99)", httpbench.WRK_MARK.strip()):
        assert name in httpbench.WRK_SCRIPT


# -- request count -------------------------------------------------------------------------------

@pytest.mark.parametrize("served, ok", [(1000, True), (1016, True), (1010, True), (999, False), (1017, False)])
def test_request_count_allows_one_in_flight_per_connection(served, ok):
    problem = httpbench.check_request_count(served, wrk_total=1000, connections_total=16)
    assert (problem is None) == ok
    if not ok:
        assert str(served) in problem


# -- machine facts -------------------------------------------------------------------------------

def test_stat_cpu_ticks_survive_a_command_name_with_spaces_and_parens():
    line = "4242 (http (server) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 3 0 100 0 0\n"
    assert httpbench.parse_stat_cpu_ticks(line) == 300


def test_cpu_split_gives_the_server_the_first_half():
    assert httpbench.cpu_split([0]) is None
    assert httpbench.cpu_split([0, 1]) == ([0], [1])
    assert httpbench.cpu_split([0, 1, 2, 3, 4]) == ([0, 1], [2, 3, 4])


def test_settings_come_from_the_profile_and_bad_ones_are_named():
    constants = {"http_connections": [16, 128, 512], "http_bytes_connections": [128], "http_warmup_s": 1,
                 "http_duration_s": 2, "http_samples": 1, "http_invocations": 3, "http_workers": 0,
                 "http_wrk_threads": 0}
    settings = httpbench.HttpSettings.of(constants)
    assert httpbench.cases(settings) == [("http_plaintext", 16), ("http_plaintext", 128), ("http_plaintext", 512),
                                         ("http_bytes", 128)]
    assert settings.problems() == []
    bad = httpbench.HttpSettings.of({**constants, "http_duration_s": 0, "http_connections": [0]})
    assert bad.problems() == ["a connection count must be >= 1", "http_duration_s must be >= 1"]


def test_wrk_command_pins_and_never_has_more_threads_than_connections(tmp_path):
    cmd = httpbench.wrk_command("wrk", tmp_path / "s.lua", 8080, "/plaintext", 4, 8, 2, [1])
    assert cmd[:3] == ["taskset", "-c", "1"]
    assert cmd[cmd.index("-t") + 1] == "4" and cmd[cmd.index("-d") + 1] == "2s"
    assert cmd[-1] == "http://127.0.0.1:8080/plaintext"


# -- the latency file and the loader -------------------------------------------------------------

HEADER = ",".join(schema.HTTP_COLUMNS)


def test_read_http_csv_accepts_bom_and_crlf(tmp_path):
    path = tmp_path / "tokio.http.csv"
    path.write_bytes(("\ufeff" + HEADER + "\r\n0,http_plaintext,conns=16,0,1,2,3,4,0,0\r\n").encode())
    frame = read_http_csv(path, "tokio")
    assert frame.to_dict("records") == [{"runtime": "tokio", "invocation": 0, "benchmark": "http_plaintext",
                                         "param": "conns=16", "iteration": 0, "p50_ns": 1, "p90_ns": 2, "p99_ns": 3,
                                         "p999_ns": 4, "errors": 0, "non_2xx": 0}]


@pytest.mark.parametrize("body, where", [
    ("invocation,benchmark\n", ":1: header: header must be"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,2,3\n", ":2: 7 fields, expected 10"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,x,3,4,0,0\n", ":2: p90_ns: 'x' is not an integer >= 0"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,-2,3,4,0,0\n", ":2: p90_ns: '-2' is not an integer >= 0"),
    (HEADER + "\n0,http_plaintext,conns=16,0,5,2,3,4,0,0\n", ":2: p999_ns: percentiles out of order"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,2,3,4,2,0\n", ":2: errors: 2 in a written sample"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,2,3,4,0,1\n", ":2: non_2xx: 1 in a written sample"),
    (HEADER + "\n0,http_json,conns=16,0,1,2,3,4,0,0\n", ":2: benchmark: 'http_json' is not an http benchmark"),
    (HEADER + "\n0,http_plaintext,size=16,0,1,2,3,4,0,0\n", ":2: param: 'size=16' is not conns=N"),
    (HEADER + "\n0,http_plaintext,conns=16,0,1,2,3,4,0,0\n0,http_plaintext,conns=16,0,1,2,3,4,0,0\n",
     ":3: sample (0, 'http_plaintext', 'conns=16', 0) already on line 2"),
    ("", ":1: empty file"),
])
def test_read_http_csv_names_file_line_and_problem(tmp_path, body, where):
    path = tmp_path / "tokio.http.csv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_http_csv(path, "tokio")
    assert str(caught.value).startswith(str(path) + where)
    assert "\n" not in str(caught.value)


def test_a_run_with_http_rows_loads_with_its_latency(tmp_path):
    folder = write_http_run(tmp_path / "data")
    run = load_run(folder)
    assert set(run.runtimes) == {"ampere", "ampere.io", "zig.threaded", "tokio"}  # no runtime "tokio.http"
    assert len(run.http) == 3 * 3 * 3 and set(run.http["runtime"]) == {"ampere.io", "zig.threaded", "tokio"}
    assert (run.data["suite"] == "http").sum() == 27


def test_a_run_without_http_files_still_loads_with_an_empty_http_frame(tmp_path):
    from analysis_fakes import write_run
    run = load_run(write_run(tmp_path / "data"))
    assert run.http.empty and list(run.http.columns) == ["runtime", *schema.HTTP_COLUMNS]


def test_http_rows_without_their_latency_file_are_an_error(tmp_path):
    folder = write_http_run(tmp_path / "data")
    (folder / "tokio.http.csv").unlink()
    with pytest.raises(DataError, match=r"tokio\.http\.csv: file not found \(tokio\.csv has http rows"):
        load_run(folder)


def test_latency_rows_must_match_the_http_rows(tmp_path):
    folder = write_http_run(tmp_path / "data")
    path = folder / "tokio.http.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # one sample's latency missing
    with pytest.raises(DataError, match="no latency row for the http sample"):
        load_run(folder)
    path.write_text("\n".join(lines + ["7,http_plaintext,conns=16,0,1,2,3,4,0,0"]) + "\n")
    with pytest.raises(DataError, match=r"sample \(7, 'http_plaintext', 'conns=16', 0\) has no suite=http row"):
        load_run(folder)


# -- results -------------------------------------------------------------------------------------

def test_summary_has_every_runtime_and_connection_count_with_intervals(tmp_path):
    run = load_run(write_http_run(tmp_path / "data"))
    table = httpsuite.summary(run)
    assert list(table["connections"].unique()) == [16, 128, 512]
    assert len(table) == 9 and (table["n_invocations"] == 3).all()
    assert (table["rps_low"] < table["rps"]).all() and (table["rps"] < table["rps_high"]).all()
    tokio_512 = table[(table["runtime"] == "tokio") & (table["connections"] == 512)].iloc[0]
    assert tokio_512["rps"] == pytest.approx(31_000, rel=0.05)
    assert tokio_512["cpu_ns_per_request"] == pytest.approx(0.9e9 / 62_000, rel=0.05)
    assert tokio_512["p99_ns"] == pytest.approx(4 * 512 / 31_000 * 1e9, rel=0.05)


def test_sentences_name_the_loss_and_the_absent_side(tmp_path):
    run = load_run(write_http_run(tmp_path / "data"))
    table = httpsuite.summary(run)
    lines = httpsuite.runtime_sentences(table, httpsuite.absent_sides(run.info, table))
    assert [line.split(" ")[0] for line in lines] == ["ampere.io", "zig.threaded", "zio:", "Tokio"]
    ampere = lines[0]
    assert "16 connections" in ampere and "512 connections" in ampere and "p99" in ampere
    assert "clearly the fastest at 16 connections, clearly behind the fastest at 128, 512 (intervals" in ampere
    assert all("fastest at 1 of" not in line for line in lines)  # no tally of point estimates (issue 43)
    assert lines[2] == "zio: absent from the http suite — zio package not cached."
    assert "failed sample(s)" in httpsuite.settings_sentence(run.info)
    assert len(httpsuite.failed_samples(run.info)) == 1


def test_figure_has_three_panels_per_route_and_says_so_without_rows(tmp_path):
    from analysis.figures import http as figures
    run = load_run(write_http_run(tmp_path / "data"))
    fig = figures.panels(httpsuite.summary(run), "tokio", 0.95)
    assert len(fig.axes) == 3
    assert {ax.get_ylabel() for ax in fig.axes} == {"requests/s", "p99 latency, ms (log scale)", "server CPU per request, µs"}
    empty = figures.panels(httpsuite.summary(run).iloc[0:0], "tokio", 0.95)
    assert "no http rows in this run" in [t.get_text() for ax in empty.axes for t in ax.texts]


# -- the orchestrator's fault paths (fake server, fake wrk) ---------------------------------------

def fake_context(tmp_path, extra: int = 0, connections=(16, 128)) -> httpbench.HttpContext:
    server = install(tmp_path, "fake_server.py", FAKE_SERVER)
    wrk = install(tmp_path, "fake_wrk.py", FAKE_WRK)
    marker = tmp_path / "crashed-once"
    settings = httpbench.HttpSettings(tuple(connections), (), 1, 1, 1, 1, 1, 1)
    (tmp_path / "logs").mkdir()
    return httpbench.HttpContext(tmp_path, tmp_path, settings, str(wrk), tmp_path / "s.lua", None, None, 1, 1, 30,
                                 out=io.StringIO(), err=io.StringIO(),
                                 command=lambda rt, w, meta: [str(server), str(marker), str(extra)])


def test_a_server_that_dies_mid_sample_fails_that_sample_and_the_run_goes_on(tmp_path):
    ctx = fake_context(tmp_path)
    samples = httpbench.serve_invocation(ctx, "ampere.io", 2, None, tmp_path / "logs" / "server.txt")
    assert len(ctx.failures) == 1
    failure = ctx.failures[0]
    assert failure["runtime"] == "ampere.io" and failure["connections"] == 16 and failure["invocation"] == 2
    assert "exited with code 3" in failure["reason"]
    assert "error: http sample failed (ampere.io invocation 2, http_plaintext at 16 connections, sample 0)" in \
        ctx.err.getvalue()
    # a fresh server served the next case, and its count passed the check
    assert [(s.benchmark, s.connections) for s in samples] == [("http_plaintext", 128)]
    rows, latency = httpbench.rows_of("ampere.io", 2, 1, samples)
    assert rows[0]["param"] == "conns=128" and rows[0]["ops"] == 100 and rows[0]["suite"] == "http"
    assert latency[0]["p999_ns"] == 400_000


def test_a_server_whose_count_disagrees_with_wrk_has_its_samples_dropped(tmp_path):
    ctx = fake_context(tmp_path, extra=10_000, connections=(16,))
    (tmp_path / "crashed-once").touch()  # no crash: every run is clean, the count is not
    samples = httpbench.serve_invocation(ctx, "tokio", 0, None, tmp_path / "logs" / "server.txt")
    assert samples == []
    assert len(ctx.failures) == 1 and ctx.failures[0]["benchmark"] is None
    assert "request count: the server counted 10200 requests, more than wrk's 200" in ctx.failures[0]["reason"]


def test_a_server_that_never_says_listening_fails_its_sample(tmp_path):
    ctx = fake_context(tmp_path, connections=(16,))
    silent = install(tmp_path, "silent.py", "#!{python}\nimport sys\nsys.exit(4)\n")
    ctx.command = lambda rt, w, meta: [str(silent)]
    assert httpbench.serve_invocation(ctx, "zio", 0, None, tmp_path / "logs" / "server.txt") == []
    assert "did not say `listening <port>`" in ctx.failures[0]["reason"]
    assert "exited with code 4" in ctx.failures[0]["reason"]


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_real_wrk_runs_the_report_script(tmp_path):
    """The Lua script on the installed wrk against a fake server that answers nothing: the
    report line parses and the sample fails for its socket errors."""
    ctx = fake_context(tmp_path, connections=(4,))
    ctx.wrk = shutil.which("wrk")
    ctx.script.write_text(httpbench.WRK_SCRIPT)
    (tmp_path / "crashed-once").touch()
    httpbench.serve_invocation(ctx, "tokio", 0, None, tmp_path / "logs" / "server.txt")
    assert "socket errors" in ctx.failures[0]["reason"] or "no request completed" in ctx.failures[0]["reason"]
    assert "wrk version" not in ctx.failures[0]["reason"]
    assert httpbench.wrk_version(ctx.wrk)


# -- the orchestrator's options ------------------------------------------------------------------

def test_profiles_carry_the_http_settings_and_set_overrides_them():
    from analysis import bench
    from analysis.build import REPO_ROOT
    full = bench.load_profile(REPO_ROOT, "full")
    constants, overrides = bench.effective_constants(full, ["http_duration_s=5", "http_bytes_connections=16,128,512"])
    settings = httpbench.HttpSettings.of(constants)
    assert settings.duration_s == 5 and settings.bytes_connections == (16, 128, 512)
    # BENCHMARKS.md: at least 5 invocations of 5 s samples; the connection counts trimmed instead
    assert settings.connections == (16, 512) and settings.invocations >= 5 and full["http_duration_s"] >= 5
    assert settings.open_percent == (50, 80) and settings.open_connections == 128 and not settings.problems()
    assert overrides == {"http_duration_s": 5, "http_bytes_connections": [16, 128, 512]}
    with pytest.raises(Exception, match="unknown constant 'http_nope'"):
        bench.effective_constants(full, ["http_nope=1"])


def test_http_overrides_stay_with_the_orchestrator_and_native_variants_have_no_server(tmp_path):
    from analysis import bench
    from analysis.errors import AnalysisError
    options = bench.BenchOptions(suite="http", sets=["http_duration_s=1", "iterations=2"])
    assert options.program_sets == ["iterations=2"]
    assert options.variant_names == httpbench.HTTP_DEFAULT_VARIANTS
    assert not options.runs_programs and options.runs_http
    assert bench.plan(options, tmp_path) == [] and bench.plan_warmup(options, tmp_path) == []
    assert bench.BenchOptions(suite="all").runs_http and not bench.BenchOptions(suite="all", quick=True).runs_http
    with pytest.raises(AnalysisError, match="--suite http: ampere has no http server"):
        bench.check_suite(bench.BenchOptions(suite="http", runtimes=("ampere", "tokio")))


# -- the full profile's --suite all (make report) with fake programs and a fake wrk ---------------

def test_suite_all_of_the_full_profile_adds_the_http_rows_to_tokio_and_writes_the_latency_file(
        tmp_path, monkeypatch, cli):
    from analysis_fakes import install_fake_bench
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ampere, tokio = install_fake_bench(bin_dir, "ampere"), install_fake_bench(bin_dir, "tokio")
    wrk_dir = tmp_path / "wrk"
    wrk_dir.mkdir()
    install(wrk_dir, "wrk", FAKE_WRK)
    install(wrk_dir, "oha", FAKE_OHA)
    monkeypatch.setenv("PATH", f"{wrk_dir}:{__import__('os').environ['PATH']}")
    data = tmp_path / "data"
    code, out, err = cli("bench", "--data-dir", data, "--ampere-bin", ampere, "--tokio-bin", tokio,
                         "--runtimes", "ampere,tokio", "--invocations", "1", "--no-warmup", "--filter", "mutex",
                         "--workers", "1", "--set", "http_connections=4", "--set", "http_bytes_connections=8",
                         "--set", "http_warmup_s=0", "--set", "http_duration_s=1", "--set", "http_invocations=2")
    assert code == 0, err
    run = load_run(next((data / "runs").iterdir()))
    assert "http" in run.info["suites"] and run.info["http"]["failed_samples"] == []
    assert [o["runtime"] for o in run.info["http"]["invocation_order"]] == ["tokio", "tokio"]
    http = run.data[(run.data["suite"] == "http") & (run.data["benchmark"] != "http_plaintext_open")]
    assert set(http["runtime"]) == {"tokio"} and len(http) == 2 * 2  # two cases, two invocations
    opened = run.data[run.data["benchmark"] == "http_plaintext_open"]  # the full profile's open loop: 50%, 80%
    assert sorted(opened["param"]) == ["load=50", "load=50", "load=80", "load=80"]
    assert run.info["http"]["open_loop"]["slowest"] == "tokio"
    assert sorted(set(http["param"])) == ["conns=4", "conns=8"] and (http["ops"] == 100).all()
    assert len(run.http) == 4 + 4 and (run.data["suite"] == "micro").any()
    assert run.info["overrides"]["http_invocations"] == 2
    assert all("http_" not in arg for arg in run.info["bench_commands"]["tokio"])  # not passed to the programs
    assert "[tokio http #1] http_bytes conns=8 sample 0 done" in out


def test_too_few_response_bytes_fail_the_sample():
    """A response shorter than the route's body is a failed sample (issue 43: bytes per request
    are checked, not assumed)."""
    ok = httpbench.WrkReport(10, 1_000_000, dict.fromkeys(("connect", "read", "write", "status", "timeout"), 0),
                             {"p50": 1, "p90": 2, "p99": 3, "p999": 4, "max": 5}, bytes=10 * 140)
    assert httpbench.sample_problem(ok, "http_plaintext") is None
    assert "fewer than the 16384-byte body of /bytes/16384" in httpbench.sample_problem(ok, "http_bytes")
    assert ok.bytes_per_request == 140


def test_the_server_cpu_is_read_over_the_measured_window_only():
    run = httpbench.GeneratorRun(0, "", "", 10.0, 12.0, 5, [(10.0, 0), (10.5, 100), (11.0, 600), (12.0, 1600)])
    assert run.server_cpu_between(11.0, 12.0) == 1000  # the window: the set-up's 600 ns left out
    assert run.server_cpu_between(10.75, 11.5) == 1100 - 350  # interpolated inside the readings
    assert httpbench.GeneratorRun(0, "", "", 0, 1, 0, [(0.0, 5)]).server_cpu_between(0, 1) is None


def test_oha_report_parses_into_latency_and_counts():
    text = json.dumps({"summary": {"total": 5.0, "slowest": 0.02, "totalData": 1300},
                       "latencyPercentiles": {"p50": 0.001, "p90": 0.002, "p99": 0.004, "p99.9": 0.0105},
                       "statusCodeDistribution": {"200": 100, "503": 2},
                       "errorDistribution": {"aborted due to deadline": 7, "connection reset": 1}})
    report = httpbench.parse_oha_output(text)
    assert (report.requests, report.duration_us, report.non_2xx, report.socket_errors) == (100, 5_000_000, 2, 1)
    assert report.latency_us == {"p50": 1000, "p90": 2000, "p99": 4000, "p999": 10500, "max": 20000}
    with pytest.raises(httpbench.SampleFailed, match="oha report unreadable"):
        httpbench.parse_oha_output("not json")
    assert httpbench.oha_command("oha", 80, 128, 6000.4, 5, [1])[:3] == ["taskset", "-c", "1"]
    assert "--latency-correction" in httpbench.oha_command("oha", 80, 128, 6000, 5, None)


def test_open_loop_runs_every_runtime_at_fractions_of_the_slowest_capacity(tmp_path):
    """After the closed loop: the slowest runtime's GET /plaintext capacity sets the rates, every
    runtime runs at each, and the rows carry load=P with oha's percentiles."""
    ctx = fake_context(tmp_path)
    ctx.settings = httpbench.HttpSettings((16,), (), 0, 1, 1, 2, 1, 1, open_connections=8, open_percent=(50, 80),
                                          open_duration_s=1)
    ctx.oha = str(install(tmp_path, "fake_oha.py", FAKE_OHA))
    result = httpbench.run_http(ctx, ("ampere.io", "tokio"), lambda names, k: names[k % 2:] + names[:k % 2])
    record = result.record["open_loop"]
    capacity = httpbench.capacities({rt: [r for r in rows if r["benchmark"] == "http_plaintext"]
                                     for rt, rows in result.rows.items()})
    assert record["slowest"] == min(capacity, key=capacity.get)
    assert record["rates_rps"] == {"50": round(capacity[record["slowest"]] / 2, 1),
                                   "80": round(capacity[record["slowest"]] * 0.8, 1)}
    assert record["generator"]["name"] == "oha" and record["generator"]["version"] == "1.16.0"
    opened = [r for r in result.rows["tokio"] if r["benchmark"] == "http_plaintext_open"]
    assert sorted(r["param"] for r in opened) == ["load=50", "load=50", "load=80", "load=80"]  # 2 invocations
    lat = [r for r in result.latency["tokio"] if r["param"] == "load=80"][0]
    assert (lat["p50_ns"], lat["p99_ns"], lat["p999_ns"]) == (500_000, 2_000_000, 3_000_000)
    assert all(e["generator_cpu_ns"] >= 0 and e["bytes_per_request"] > 0 for e in result.record["samples"])
    assert [(o["runtime"], o["invocation"]) for o in record["invocation_order"]] == [
        ("ampere.io", 0), ("tokio", 0), ("tokio", 1), ("ampere.io", 1)]
    ctx.oha = None
    assert httpbench._open_loop(ctx, ("tokio",), lambda n, k: n, {}, {}, [], tmp_path)["absent"].startswith("oha is")
