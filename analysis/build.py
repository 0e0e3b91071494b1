"""`python -m analysis build`: the one recipe that builds the benchmark binaries.

Every builder goes through this module: `make build` (and so `make bench`/`make report`),
`python -m analysis bench --build`, `zig build compare` (which runs `bench --build`) and
`scripts/test_all.py`. Nothing else holds a copy of these commands.

| base runtime | binary | command (run from the repository root) |
|---|---|---|
| ampere | zig-out/bin/ampere_bench | `.venv/bin/python -m ziglang build bench-build` (ReleaseFast, see build.zig) |
| tokio | rust_bench/target/release/tokio_bench | `cargo build --release --manifest-path rust_bench/Cargo.toml` |

cargo runs from the root so that `.cargo/config.toml` (target-cpu=native) applies. Compiler
output goes to stderr; stdout gets one `==> [build] ...` line per step. A failing step raises
RunFailed naming the step (CLI: one `error:` line, exit 1).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import AnalysisError, RunFailed

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Base runtimes this repository builds, in build order.
RUNTIMES: tuple[str, ...] = ("ampere", "tokio")
#: Where each build puts its program, relative to the repository root.
BINARIES: dict[str, Path] = {
    "ampere": Path("zig-out/bin/ampere_bench"),
    "tokio": Path("rust_bench/target/release/tokio_bench"),
}


@dataclass(frozen=True)
class BuildStep:
    runtime: str
    name: str
    description: str
    command: list[str]


def python_for(root: Path) -> str:
    """The project's virtualenv interpreter (it carries the pinned Zig), else this one."""
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def build_steps(root: Path, runtimes: tuple[str, ...] = RUNTIMES) -> list[BuildStep]:
    """The build commands of the given base runtimes, in RUNTIMES order."""
    unknown = [rt for rt in runtimes if rt not in RUNTIMES]
    if unknown:
        raise AnalysisError(f"no build recipe for runtime {unknown[0]!r} (known: {', '.join(RUNTIMES)})")
    recipes = {
        "ampere": BuildStep("ampere", "zig build bench-build", "ampere_bench (Zig 0.16.0, ReleaseFast)",
                            [python_for(root), "-m", "ziglang", "build", "bench-build"]),
        "tokio": BuildStep("tokio", "cargo build --release",
                           "tokio_bench (Rust, release: opt-level=3, lto=fat, codegen-units=1)",
                           ["cargo", "build", "--release", "--quiet", "--manifest-path",
                            str(root / "rust_bench" / "Cargo.toml")]),
    }
    return [recipes[rt] for rt in RUNTIMES if rt in runtimes]


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced stderr (e.g. captured in tests)
        return None


def build(root: Path = REPO_ROOT, runtimes: tuple[str, ...] = RUNTIMES) -> None:
    """Run the build steps; RunFailed names the first one that fails."""
    for step in build_steps(root, runtimes):
        print(f"==> [build] {step.description}", flush=True)
        try:
            # compiler output goes to our stderr (fd 2), keeping stdout for progress and tables
            done = subprocess.run(step.command, cwd=root, stdout=_stderr_fd(), stderr=_stderr_fd())
        except OSError as exc:
            raise RunFailed(f"build step '{step.name}' failed: {exc.strerror or exc}: {step.command[0]}") from None
        if done.returncode != 0:
            raise RunFailed(f"build step '{step.name}' failed (exit code {done.returncode})")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("build", parents=[common], help="build the benchmark programs (release)",
                       description="Build ampere_bench (zig build bench-build, ReleaseFast) and tokio_bench "
                                   "(cargo build --release): the one build recipe of the lab.")
    p.add_argument("--runtimes", default=",".join(RUNTIMES),
                   help=f"comma-separated base runtimes to build (default {','.join(RUNTIMES)})")
    p.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    runtimes = tuple(r.strip() for r in args.runtimes.split(",") if r.strip())
    if not runtimes:
        raise AnalysisError(f"--runtimes {args.runtimes!r}: expected a comma-separated subset of {', '.join(RUNTIMES)}")
    build(REPO_ROOT, runtimes)
    return 0
