"""analysis.machine_load (issue 43 item 6): the machine's load recorded per invocation and flagged."""

from __future__ import annotations

import math

import pytest

from analysis import machine_load as ml


def test_stat_line_busy_steal_total():
    text = "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"
    # busy = user + nice + system + irq + softirq; guest is inside user already; total adds idle, iowait, steal
    assert ml.parse_stat_cpu(text) == (160, 10, 990)
    with pytest.raises(ValueError):
        ml.parse_stat_cpu("intr 1 2 3\n")


def _snap(t: float, busy: int, steal: int, total: int, own: float = 0.0, load: float = 1.0) -> ml.Snapshot:
    return ml.Snapshot(t, load, busy, steal, total, own)


def test_between_other_processes_cpu_is_busy_minus_measured_minus_own():
    # 2 cores, 10 s: 2000 ticks of 10 ms; 1200 busy ticks = 12 CPU-seconds; the program used 7, we used 1
    record = ml.between(_snap(0, 0, 0, 0), _snap(10, 1200, 40, 2000, own=1.0, load=3.5), 7.0, cores=2)
    assert record == {"loadavg_1m": 3.5, "steal_share": 0.02, "other_cpu_cores": 0.4, "measured_cpu_cores": 0.7,
                      "cores": 2, "elapsed_s": 10.0}
    assert ml.reasons(record) == ["other processes kept 0.40 cores busy"]
    quiet = ml.between(_snap(0, 0, 0, 0), _snap(10, 710, 0, 2000), 7.0, cores=2)
    assert quiet["other_cpu_cores"] == pytest.approx(0.01) and ml.reasons(quiet) == []
    assert ml.reasons({"other_cpu_cores": 0.0, "steal_share": 0.05}) == ["the hypervisor stole 5.0% of the CPU time"]
    assert ml.between(None, _snap(1, 0, 0, 1), 0.0) is None and ml.reasons(None) == []


def test_a_real_snapshot_reads_proc():
    snap = ml.snapshot()
    assert snap is not None and snap.total_ticks > 0 and snap.loadavg_1m >= 0
    assert ml.snapshot(__import__("pathlib").Path("/no/such/proc")) is None


def test_run_summary_and_sentence_flag_a_disturbed_run():
    calm = {"loadavg_1m": 0.5, "steal_share": 0.0, "other_cpu_cores": 0.05, "cores": 2}
    busy = {"loadavg_1m": 8.6, "steal_share": 0.0, "other_cpu_cores": 1.2, "cores": 2}
    info = {"invocation_order": [{"runtime": "ampere", "invocation": 0, "suite": "micro", "load": calm},
                                 {"runtime": "tokio", "invocation": 0, "suite": "micro", "load": busy}],
            "http": {"invocation_order": [{"runtime": "tokio", "invocation": 0, "suite": "http", "load": calm}]}}
    s = ml.run_summary(info)
    assert (s["recorded"], s["disturbed"], s["flagged"]) == (3, 1, True)
    assert s["loadavg_max"] == 8.6 and s["disturbed_invocations"][0]["runtime"] == "tokio"
    sentence = ml.run_sentence(info, "r1")
    assert sentence.startswith("DISTURBED — Run r1: 1 of 3 invocations disturbed (33%")
    assert "peak 8.60 on 2 cores" in sentence
    calm_run = {"invocation_order": [{"runtime": "a", "invocation": k, "load": calm} for k in range(20)]}
    assert not ml.run_sentence(calm_run).startswith("DISTURBED")
    old = ml.run_summary({"invocation_order": [{"runtime": "a", "invocation": 0, "elapsed_s": 1.0}]})
    assert old["recorded"] == 0 and math.isnan(old["share"])
    assert "not recorded" in ml.run_sentence({"invocation_order": []})
