# Ampere lab. The two commands: `make report` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY      := .venv/bin/python
ZIG     := $(PY) -m ziglang
CARGO   ?= cargo
SUITE   ?= all
# Extra flags for the orchestrator, e.g. BENCH_ARGS="--quick --invocations 1"
BENCH_ARGS ?=
# Stress-test size for the Zig tests: full locally, smoke in CI (.ci/run).
AMPERE_TEST_INTENSITY ?= full
export AMPERE_TEST_INTENSITY

.PHONY: help setup build bench report test lab clean

help:
	@echo "make report   set up, build, run both benchmarks, analyse, write reports/<run_id>/index.html"
	@echo "make test     set up, then every test (zig, tsan, cargo, pytest, end-to-end smoke, browser)"
	@echo "make bench    benchmarks only: a new run folder in data/runs/ (SUITE=micro|echo|all, BENCH_ARGS=...)"
	@echo "make lab      JupyterLab on notebooks/"

setup:
	@bash scripts/bootstrap.sh

build: setup
	@echo "==> [build] ampere_bench (Zig 0.15.2, ReleaseFast)"
	@$(ZIG) build bench-build || { echo "error: step 'build ampere_bench' failed" >&2; exit 1; }
	@echo "==> [build] tokio_bench (Rust, release: opt-level=3, lto=fat, codegen-units=1)"
	@$(CARGO) build --release --quiet --manifest-path rust_bench/Cargo.toml || { echo "error: step 'build tokio_bench' failed" >&2; exit 1; }

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
