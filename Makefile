# Ampere lab. The two commands: `make report` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY      := .venv/bin/python
ZIG     := $(PY) -m ziglang
SUITE   ?= all
# Extra flags for the orchestrator, e.g. BENCH_ARGS="--quick --invocations 1" or
# BENCH_ARGS="--runtimes ampere,tokio --workers 1,4"
BENCH_ARGS ?=
# Stress-test size for the Zig tests: full locally, smoke in CI (.ci/run).
AMPERE_TEST_INTENSITY ?= full
export AMPERE_TEST_INTENSITY

.PHONY: help setup build bench report test lab clean

help:
	@echo "make report   set up, build, run both benchmarks, analyse, write reports/<run_id>/index.html"
	@echo "make test     set up, then every test (zig, tsan, cargo, pytest, end-to-end smoke, browser)"
	@echo "make build    build both benchmark programs (python -m analysis build)"
	@echo "make bench    benchmarks only: a new run folder in data/runs/ (SUITE=micro|echo|net|io|http|all, BENCH_ARGS=...)"
	@echo "make lab      JupyterLab on notebooks/"

setup:
	@bash scripts/bootstrap.sh

# The one build recipe of the benchmark programs is analysis/build.py (also used by
# `analysis bench --build`, `zig build compare` and scripts/test_all.py).
build: setup
	@$(PY) -m analysis build || { echo "error: step 'build' failed" >&2; exit 1; }

bench: build
	@echo "==> [bench] suite=$(SUITE) $(BENCH_ARGS)"
	@$(PY) -m analysis bench --suite $(SUITE) $(BENCH_ARGS) || { echo "error: step 'bench' failed" >&2; exit 1; }

report: bench
	@echo "==> [report] analysing and rendering the newest run"
	@$(PY) -m analysis report latest || { echo "error: step 'report' failed" >&2; exit 1; }

test:
	@bash scripts/bootstrap.sh --browser
	@$(PY) scripts/test_all.py

lab: setup
	@$(PY) -m jupyter lab --notebook-dir=notebooks

clean:
	rm -rf zig-out .zig-cache rust_bench/target reports
