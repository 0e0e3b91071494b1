"""`python -m analysis build`: the one recipe that builds the benchmark binaries.

Every builder goes through this module: `make build` (and so `make bench`/`make report`),
`python -m analysis bench --build`, `zig build compare` (which runs `bench --build`) and
`scripts/test_all.py`. Nothing else holds a copy of these commands.

| base runtime | binary | command (run from the repository root) |
|---|---|---|
| ampere | zig-out/bin/ampere_bench | `.venv/bin/python -m ziglang build bench-build` (ReleaseFast, see build.zig) |
| tokio | rust_bench/target/release/tokio_bench (also the http suite's hyper server: `tokio_bench http-server`) | `cargo build --release --manifest-path rust_bench/Cargo.toml` |
| io (`zig.threaded`, `zio`, `ampere.io`) | zig-out/bin/io_bench_threaded, io_bench_zio, io_bench_ampere and the http suite's servers http_server_threaded, http_server_zio, http_server_ampere | `.venv/bin/python -m ziglang build io-bench-build [-Dzio=true] [-Dio-ampere=true]` |

The io programs (runtime/bench/README.md, "Io suite") are one Zig source built per `std.Io`
implementation. A side that cannot be built is *absent*, with its reason, and the rest of the
build goes on: `zio` when its package (build.zig.zon, lazy) is not in the Zig package cache
and cannot be seeded, or its build fails; `ampere.io` until `AMPERE_IO_BUILT` is set (the step
that turns it on once `Runtime.io()` exists: set it to True; build.zig's `-Dio-ampere=true`
then builds io_bench_ampere from runtime/bench/io_impl.zig, which already calls `Runtime.io()`).
The reasons go to `zig-out/io-absent.json`, which the orchestrator records in run.json.

Offline machines: with `$AMPERE_PEERS_DIR` naming a folder of package tarballs (the lab's copy
is ../shared/peers/, which .ci/run passes), `seed_peers` runs `zig fetch <tarball>` for each
package of build.zig.zon found there and checks that the hash Zig prints is the declared one.

cargo runs from the root so that `.cargo/config.toml` (target-cpu=native) applies. Compiler
output goes to stderr; stdout gets one `==> [build] ...` line per step. A failing step raises
RunFailed naming the step (CLI: one `error:` line, exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import AnalysisError, RunFailed

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Base runtimes this repository builds, in build order (`io`: the io programs).
RUNTIMES: tuple[str, ...] = ("ampere", "tokio")
BUILDS: tuple[str, ...] = (*RUNTIMES, "io")
#: The io programs: one per std.Io implementation (schema.STD_IO_RUNTIMES); `zio.epoll` is zio
#: built on epoll instead of its default io_uring (built with zio, absent with it).
IO_PROGRAMS: dict[str, Path] = {
    "ampere.io": Path("zig-out/bin/io_bench_ampere"),
    "zig.threaded": Path("zig-out/bin/io_bench_threaded"),
    "zio": Path("zig-out/bin/io_bench_zio"),
    "zio.epoll": Path("zig-out/bin/io_bench_zio_epoll"),
}
#: The io programs built only with `-Dzio=true` (the lazy zio package).
ZIO_PROGRAMS: tuple[str, ...] = ("zio", "zio.epoll")
#: The http suite's server on each std.Io implementation (built with the io programs; none for
#: zio.epoll, which runs the io suite only).
HTTP_SERVER_BINARIES: dict[str, Path] = {
    "ampere.io": Path("zig-out/bin/http_server_ampere"),
    "zig.threaded": Path("zig-out/bin/http_server_threaded"),
    "zio": Path("zig-out/bin/http_server_zio"),
}
#: Where each build puts its program, relative to the repository root.
BINARIES: dict[str, Path] = {
    "ampere": Path("zig-out/bin/ampere_bench"),
    "tokio": Path("rust_bench/target/release/tokio_bench"),
    **IO_PROGRAMS,
}
#: Whether the io program is built on ampere's std.Io (`Runtime.io()`, issue 22: it is). Off,
#: the ampere.io side is recorded absent with AMPERE_IO_ABSENT.
AMPERE_IO_BUILT = True
AMPERE_IO_ABSENT = "ampere.Io not built yet"
#: Where the build records the io sides it could not build (name -> reason).
IO_ABSENT_FILE = Path("zig-out/io-absent.json")
PEERS_ENV = "AMPERE_PEERS_DIR"
ZIO_TARBALL = "zio-0.17.0.tar.gz"


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
    """The build commands of the given base runtimes (`io`: the io programs without zio), in
    BUILDS order."""
    unknown = [rt for rt in runtimes if rt not in BUILDS]
    if unknown:
        raise AnalysisError(f"no build recipe for runtime {unknown[0]!r} (known: {', '.join(BUILDS)})")
    recipes = {
        "ampere": BuildStep("ampere", "zig build bench-build", "ampere_bench (Zig 0.16.0, ReleaseFast)",
                            [python_for(root), "-m", "ziglang", "build", "bench-build"]),
        "tokio": BuildStep("tokio", "cargo build --release",
                           "tokio_bench (Rust, release: opt-level=3, lto=fat, codegen-units=1)",
                           ["cargo", "build", "--release", "--quiet", "--manifest-path",
                            str(root / "rust_bench" / "Cargo.toml")]),
        "io": io_step(root, zio=False),
    }
    return [recipes[rt] for rt in BUILDS if rt in runtimes]


def io_sides(zio: bool, ampere_io: bool = AMPERE_IO_BUILT) -> list[str]:
    """The io programs (IO_PROGRAMS order) an io build makes: zio's with `-Dzio=true`, ampere.io's
    with `-Dio-ampere=true`, the others always."""
    return [n for n in IO_PROGRAMS if (n not in ZIO_PROGRAMS or zio) and (n != "ampere.io" or ampere_io)]


def io_step(root: Path, zio: bool) -> BuildStep:
    flags = (["-Dzio=true"] if zio else []) + (["-Dio-ampere=true"] if AMPERE_IO_BUILT else [])
    sides = ", ".join(io_sides(zio))
    return BuildStep("io", "zig build io-bench-build", f"io programs ({sides}; Zig 0.16.0, ReleaseFast)",
                     [python_for(root), "-m", "ziglang", "build", "io-bench-build", *flags])


# -- the peer package (zio) -----------------------------------------------------------------

def declared_hash(root: Path, package: str) -> str | None:
    """The `.hash` of dependency `package` in build.zig.zon."""
    text = (root / "build.zig.zon").read_text(encoding="utf-8")
    match = re.search(r"\." + re.escape(package) + r"\s*=\s*\.\{[^}]*?\.hash\s*=\s*\"([^\"]+)\"", text, re.S)
    return match[1] if match else None


def zig_cache_dir(root: Path) -> Path:
    """Zig's global cache folder (`zig env`'s global_cache_dir)."""
    done = subprocess.run([python_for(root), "-m", "ziglang", "env"], capture_output=True, text=True, timeout=60)
    match = re.search(r'global_cache_dir"?\s*[=:]\s*"([^"]+)"', done.stdout)
    if done.returncode != 0 or not match:
        raise RunFailed("cannot read the Zig global cache folder from `zig env`")
    return Path(match[1])


def package_cached(root: Path, package_hash: str) -> bool:
    """Whether the Zig package cache holds the package (a folder, or Zig 0.16's archive)."""
    folder = zig_cache_dir(root) / "p"
    return folder.is_dir() and any(p.name.startswith(package_hash) for p in folder.iterdir())


def seed_peers(root: Path, peers_dir: str | None = None) -> list[str]:
    """Seeds the Zig package cache from `$AMPERE_PEERS_DIR` (zig fetch of each known tarball);
    returns one line per problem (a missing tarball is none: the variable is optional)."""
    folder = peers_dir if peers_dir is not None else os.environ.get(PEERS_ENV)
    if not folder:
        return []
    tarball = Path(folder) / ZIO_TARBALL
    if not tarball.is_file():
        return [f"{PEERS_ENV}={folder}: no {ZIO_TARBALL}"]
    want = declared_hash(root, "zio")
    done = subprocess.run([python_for(root), "-m", "ziglang", "fetch", str(tarball)], cwd=root,
                          capture_output=True, text=True, timeout=600)
    got = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0:
        return [f"zig fetch {tarball} failed: {(done.stderr.strip().splitlines() or ['no message'])[-1]}"]
    if got != want:
        return [f"zig fetch {tarball} gave hash {got}, build.zig.zon declares {want}: not used"]
    print(f"==> [build] seeded the Zig package cache with {tarball.name} ({got})", flush=True)
    return []


def zio_absent_reason(root: Path) -> str | None:
    """Why zio cannot be built here (None: its package is in the Zig cache)."""
    package = declared_hash(root, "zio")
    if package is None:
        return "build.zig.zon declares no zio package"
    if package_cached(root, package):
        return None
    return (f"zio package {package} not in the Zig package cache (no network to its host: set {PEERS_ENV} to a "
            f"folder holding {ZIO_TARBALL})")


def build_io(root: Path) -> dict[str, str]:
    """Builds the io programs; returns the absent sides with their reasons (also written to
    IO_ABSENT_FILE, and a stale binary of an absent side is removed)."""
    problems = seed_peers(root)
    for line in problems:
        print(f"warning: {line}", file=sys.stderr, flush=True)
    absent: dict[str, str] = {}
    if not AMPERE_IO_BUILT:
        absent["ampere.io"] = AMPERE_IO_ABSENT
    reason = zio_absent_reason(root)
    if reason is None:
        try:
            _run_step(root, io_step(root, zio=True))
        except RunFailed as exc:
            reason = f"zio build failed ({exc})"
    if reason is not None:
        for name in ZIO_PROGRAMS:
            absent[name] = reason
        print(f"==> [build] zio absent: {reason}", flush=True)
        _run_step(root, io_step(root, zio=False))
    for name in absent:
        (root / IO_PROGRAMS[name]).unlink(missing_ok=True)
        if name in HTTP_SERVER_BINARIES:
            (root / HTTP_SERVER_BINARIES[name]).unlink(missing_ok=True)
    target = root / IO_ABSENT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(absent, indent=2) + "\n", encoding="utf-8")
    return absent


def io_absent(root: Path) -> dict[str, str]:
    """The io sides the last build could not build (IO_ABSENT_FILE), {} without a record."""
    path = root / IO_ABSENT_FILE
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced stderr (e.g. captured in tests)
        return None


def build(root: Path = REPO_ROOT, runtimes: tuple[str, ...] = BUILDS) -> None:
    """Run the build steps (`io` through build_io); RunFailed names the first one that fails."""
    for step in build_steps(root, runtimes):
        if step.runtime == "io":
            build_io(root)
        else:
            _run_step(root, step)


def _run_step(root: Path, step: BuildStep) -> None:
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
    p.add_argument("--runtimes", default=",".join(BUILDS),
                   help=f"comma-separated base runtimes to build (default {','.join(BUILDS)}; io = the io programs)")
    p.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    runtimes = tuple(r.strip() for r in args.runtimes.split(",") if r.strip())
    if not runtimes:
        raise AnalysisError(f"--runtimes {args.runtimes!r}: expected a comma-separated subset of {', '.join(BUILDS)}")
    build(REPO_ROOT, runtimes)
    return 0
