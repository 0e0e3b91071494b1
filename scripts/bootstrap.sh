#!/usr/bin/env bash
# Set-up for a fresh Debian machine with Python 3.11 and Rust/cargo (nothing else assumed):
# creates .venv, installs the project with its pinned dependencies (Zig comes from the
# `ziglang` wheel), and checks every toolchain piece. It installs Debian's wrk if it is missing
# (the http suite's load generator, which `make report` runs), oha from crates.io (its open-loop
# generator; AMPERE_SKIP_OHA=1 skips it), and with --browser Debian's chromium (the browser test
# of `make test` needs it).
# Every failure is one line naming the missing piece.
set -uo pipefail
cd "$(dirname "$0")/.."

fail() { echo "error: setup: $*" >&2; exit 1; }
step() { echo "==> [setup] $*"; }

want_browser=0
[[ "${1:-}" == "--browser" ]] && want_browser=1

python=${PYTHON:-python3}
command -v "$python" >/dev/null || fail "python3 not found (Python 3.11 is required)"
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[[ "$version" == "3.11" ]] || fail "Python 3.11 is required, found $version ($python)"
command -v cargo >/dev/null || fail "cargo not found (install Rust with rustup)"

if [[ ! -x .venv/bin/python ]]; then
    step "creating .venv"
    "$python" -m venv .venv || fail "could not create .venv"
fi
if [[ ! -f .venv/.installed || pyproject.toml -nt .venv/.installed ]]; then
    step "installing pinned Python dependencies (pyproject.toml)"
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null || fail "pip upgrade failed"
    .venv/bin/python -m pip install -q -e '.[dev]' || fail "pip install -e .[dev] failed"
    .venv/bin/python -m ipykernel install --sys-prefix --name ampere-lab --display-name "Ampere lab (.venv)" >/dev/null \
        || fail "registering the Jupyter kernel failed"
    touch .venv/.installed
fi
zig_version=$(.venv/bin/python -m ziglang version 2>/dev/null) || fail "zig (python -m ziglang) does not run"
[[ "$zig_version" == "0.16.0" ]] || fail "zig 0.16.0 required, the venv has $zig_version"

# apt_install PACKAGE WHY: a Debian package, as root or through sudo; one line on failure.
apt_install() {
    step "installing $1 (Debian package, $2)"
    if [[ $(id -u) -eq 0 ]]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null) \
            || fail "apt-get install $1 failed"
    elif command -v sudo >/dev/null; then
        (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null) \
            || fail "apt-get install $1 failed"
    else
        fail "$1 is missing and this user cannot install Debian packages"
    fi
}

if ! command -v wrk >/dev/null; then
    apt_install wrk "the http suite's load generator"
fi
# oha: the http suite's open-loop load generator (a fixed request rate with latency correction;
# Debian has no wrk2). From crates.io with cargo, once (several minutes of compiling on 2 cores);
# a failure leaves the open loop out of the runs (recorded in run.json), not the setup.
oha_bin="${CARGO_HOME:-$HOME/.cargo}/bin/oha"
if ! command -v oha >/dev/null && [[ ! -x "$oha_bin" ]] && [[ "${AMPERE_SKIP_OHA:-0}" != 1 ]]; then
    step "installing oha 1.16.0 (crates.io, the http suite's open-loop load generator; a few minutes)"
    cargo install --quiet --locked oha --version 1.16.0 >/dev/null \
        || echo "warning: setup: cargo install oha failed: the http suite's open loop will not run" >&2
fi
if (( want_browser )) && ! command -v chromium >/dev/null; then
    apt_install chromium "for the browser test"
fi
exit 0
