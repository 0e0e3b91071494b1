"""`python -m analysis bundle`: a self-contained many-core run for a borrowed large machine.

    python -m analysis bundle [--out build/bundle] [--ampere-bin P --tokio-bin P [--io-dir D]]

Builds the benchmark programs for x86-64-v3 instead of this machine's CPU (Zig: `zig build
bench-build -Dcpu=x86_64_v3` and `zig build io-bench-build -Dcpu=x86_64_v3 -Dio-ampere=true
[-Dzio=true]`; Rust: `RUSTFLAGS="-C target-cpu=x86-64-v3"` into its own target folder, so the
native builds stay), and puts them with `scripts/many_core_run.sh` (as `run.sh`) and the
run.json pieces known here (`meta/`: the full profile's constants, each runtime's settings,
program and suites, each program's versions, git commit, which programs take --metrics) into
`<out>/ampere-bundle/` and `<out>/ampere-bundle-x86-64-v3.tar.gz`. On the large machine:
`tar xzf ampere-bundle-x86-64-v3.tar.gz && ampere-bundle/run.sh` (bash and coreutils only: no
Python, no network) writes one run folder of the micro suite (ampere, ampere.nospin, Tokio) and
the io suite (those three and the std.Io programs: ampere.io, zig.threaded, zio, zio.epoll) with the
worker sweep 1, 2, 4, ... up to the core count within a 9-minute budget (the script's header
says how). zio and zio.epoll are in the bundle when zio's package is in the Zig cache
(`AMPERE_PEERS_DIR` seeds it, as for `make report`); without it the bundle has the other five.
`--ampere-bin` and `--tokio-bin` take prebuilt programs instead of building (portable builds),
`--io-dir` a folder of prebuilt io programs (without it such a bundle runs the micro suite).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from .bench import (CONSTANTS_FILE, IO_METRICS_PROGRAMS, VERSION_FIELDS, git_state, io_variants, iso, load_profile,
                    load_variants, supports_metrics, utc_now)
from .build import (AMPERE_IO_BUILT, BINARIES, IO_PROGRAMS, REPO_ROOT, io_sides, python_for, seed_peers,
                    zio_absent_reason)
from .errors import AnalysisError, RunFailed
from .files import atomic_writer, write_json_atomic

ZIG_CPU = "x86_64_v3"
RUST_CPU = "x86-64-v3"
BUNDLE_NAME = "ampere-bundle"
ARCHIVE = f"{BUNDLE_NAME}-{RUST_CPU}.tar.gz"
SCRIPT = Path("scripts/many_core_run.sh")
#: The runtimes a bundle can run (run.sh --runtimes), in run.sh's default order: each one's
#: program in bin/ and the suites that program runs.
#: The program names are those of the native builds (build.BINARIES, build.IO_PROGRAMS).
RUNTIMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ampere": (BINARIES["ampere"].name, ("micro", "io")),
    "ampere.nospin": (BINARIES["ampere"].name, ("micro", "io")),
    "tokio": (BINARIES["tokio"].name, ("micro", "io")),
    **{rt: (path.name, ("io",)) for rt, path in IO_PROGRAMS.items()},
}
#: The programs every bundle has; the io programs are in it when they were built.
REQUIRED = (BINARIES["ampere"].name, BINARIES["tokio"].name)
IO_PROGRAM_NAMES = tuple(path.name for path in IO_PROGRAMS.values())


def io_build_flags(root: Path) -> list[str]:
    """The io build's sides: ampere.io when built, zio when its package is in the Zig cache."""
    return (["-Dio-ampere=true"] if AMPERE_IO_BUILT else []) + (["-Dzio=true"] if zio_absent_reason(root) is None else [])


def build_commands(root: Path, work: Path, io_flags: list[str] | None = None) -> dict[str, tuple[list[str], dict[str, str], list[Path]]]:
    """Per build: the portable build command, its environment changes and the binaries it makes."""
    target = work / "cargo-target"
    flags = io_flags if io_flags is not None else []
    io_bins = [work / "zig-io" / "bin" / IO_PROGRAMS[rt].name
               for rt in io_sides("-Dzio=true" in flags, "-Dio-ampere=true" in flags)]
    return {
        "ampere": ([python_for(root), "-m", "ziglang", "build", "bench-build", f"-Dcpu={ZIG_CPU}", "-p",
                    str(work / "zig")], {}, [work / "zig" / "bin" / "ampere_bench"]),
        "tokio": (["cargo", "build", "--release", "--quiet", "--manifest-path", str(root / "rust_bench" / "Cargo.toml")],
                  {"RUSTFLAGS": f"-C target-cpu={RUST_CPU}", "CARGO_TARGET_DIR": str(target)},
                  [target / "release" / "tokio_bench"]),
        "io": ([python_for(root), "-m", "ziglang", "build", "io-bench-build", f"-Dcpu={ZIG_CPU}", *flags, "-p",
                str(work / "zig-io")], {}, io_bins),
    }


def build_portable(root: Path, work: Path) -> dict[str, Path]:
    """Build every program for x86-64-v3 (RunFailed names the step that failed): program name -> path."""
    for line in seed_peers(root):
        print(f"warning: {line}", flush=True)
    out = {}
    for name, (command, extra, binaries) in build_commands(root, work, io_build_flags(root)).items():
        print(f"==> [bundle] {name} for {RUST_CPU}: {', '.join(b.name for b in binaries)}", flush=True)
        done = subprocess.run(command, cwd=root, env={**os.environ, **extra})
        missing = [b for b in binaries if not b.is_file()]
        if done.returncode != 0 or missing:
            raise RunFailed(f"bundle: building {name} for {RUST_CPU} failed (exit code {done.returncode}"
                            f"{', no ' + missing[0].name if missing else ''})")
        out.update({b.name: b for b in binaries})
    return out


def program_versions(binary: Path, runtime: str, suite: str) -> dict[str, Any]:
    """What a program is (bench.VERSION_FIELDS of its meta.json), from one tiny run of it here."""
    row = "floor_cas_store" if suite == "micro" else "io_mutex_contended"
    with tempfile.TemporaryDirectory() as tmp:
        meta, csv = Path(tmp) / "meta.json", Path(tmp) / "rows.csv"
        command = [str(binary), "--variant", runtime, "--quick", "--suite", suite, "--filter", row, "--workers", "1",
                   "--csv", str(csv), "--meta", str(meta)]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=300,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not meta.is_file():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RunFailed(f"bundle: {binary} did not write its meta.json (exit code {done.returncode}: {last})")
        doc = json.loads(meta.read_text(encoding="utf-8"))
    return {k: doc[k] for k in VERSION_FIELDS if doc.get(k) is not None}


def bundled_runtimes(binaries: dict[str, Path]) -> list[str]:
    """The runtimes whose program is among `binaries` (program name -> path), in RUNTIMES order."""
    return [rt for rt, (program, _) in RUNTIMES.items() if program in binaries]


def assemble(root: Path, folder: Path, binaries: dict[str, Path]) -> None:
    """The bundle folder: bin/, run.sh, meta/ (see the module doc). `folder` must not exist.
    `binaries`: program name (RUNTIMES) -> path; REQUIRED ones must be there."""
    missing = [p for p in REQUIRED if p not in binaries or not Path(binaries[p]).is_file()]
    if missing:
        raise AnalysisError(f"bundle: no {missing[0]} program at {binaries.get(missing[0])}")
    unknown = sorted(set(binaries) - {program for program, _ in RUNTIMES.values()})
    if unknown:
        raise AnalysisError(f"bundle: {unknown[0]} is not a program a bundle runs")
    (folder / "bin").mkdir(parents=True)
    (folder / "meta").mkdir()
    runtimes = bundled_runtimes(binaries)
    variants = {**load_variants(root), **io_variants()}
    for name in dict.fromkeys(RUNTIMES[rt][0] for rt in runtimes):
        target = folder / "bin" / name
        shutil.copy2(binaries[name], target)
        first = next(rt for rt in runtimes if RUNTIMES[rt][0] == name)
        write_json_atomic(folder / "meta" / f"versions.{name}.json",
                          program_versions(target, first, RUNTIMES[first][1][0]))
        io_program = RUNTIMES[first][1] == ("io",)
        if supports_metrics(target) and (not io_program or first in IO_METRICS_PROGRAMS):  # as bench.py decides
            (folder / "meta" / f"metrics.{name}").write_text("takes --metrics\n", encoding="utf-8")
    for rt in runtimes:
        program, suites = RUNTIMES[rt]
        write_json_atomic(folder / "meta" / f"variant.{rt}.json", variants[rt].record())
        (folder / "meta" / f"program.{rt}").write_text(program + "\n", encoding="utf-8")
        (folder / "meta" / f"suites.{rt}").write_text(" ".join(suites) + "\n", encoding="utf-8")
    (folder / "meta" / "runtimes").write_text("".join(rt + "\n" for rt in runtimes), encoding="utf-8")
    write_json_atomic(folder / "meta" / "constants.json", load_profile(root, "full"))
    write_json_atomic(folder / "meta" / "git.json", git_state(root))
    write_json_atomic(folder / "meta" / "bundle.json", {"target_cpu": RUST_CPU, "built_utc": iso(utc_now()),
                                                        "built_on": socket.gethostname(),
                                                        "constants_from": str(CONSTANTS_FILE)})
    script = folder / "run.sh"
    shutil.copy2(root / SCRIPT, script)
    script.chmod(0o755)


def archive(folder: Path, target: Path) -> None:
    """`folder` as a gzip tarball at `target` (written atomically)."""
    with atomic_writer(target, binary=True) as out:
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            tar.add(folder, arcname=folder.name)


def make_bundle(root: Path, out: Path, binaries: dict[str, Path] | None = None) -> Path:
    """Build (unless `binaries` are given) and assemble the bundle; returns the tarball's path.
    An existing bundle folder in `out` is replaced."""
    out.mkdir(parents=True, exist_ok=True)
    programs = binaries if binaries is not None else build_portable(root, out / "work")
    folder = out / BUNDLE_NAME
    staging = out / f".{BUNDLE_NAME}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    assemble(root, staging, programs)
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    archive(folder, out / ARCHIVE)
    return out / ARCHIVE


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("bundle", parents=[common], help="portable benchmark programs + run.sh for a large machine",
                       description="Build the benchmark programs for x86-64-v3 and bundle them with run.sh, which "
                                   "runs the micro and io suites with the worker sweep up to the machine's core "
                                   "count in at most 9 minutes and writes a run folder (bash only: no Python, no "
                                   "network).")
    p.add_argument("--out", default="build/bundle", help="output folder (default build/bundle)")
    p.add_argument("--ampere-bin", help="a prebuilt portable ampere_bench instead of building")
    p.add_argument("--tokio-bin", help="a prebuilt portable tokio_bench instead of building")
    p.add_argument("--io-dir", help="with --ampere-bin and --tokio-bin: a folder of prebuilt portable io programs "
                                    "(io_bench_ampere, io_bench_threaded, io_bench_zio; those there are bundled)")
    p.set_defaults(func=cmd_bundle)


def prebuilt(ampere_bin: str | None, tokio_bin: str | None, io_dir: str | None) -> dict[str, Path] | None:
    """The prebuilt programs the command line names (None: build them all)."""
    if not ampere_bin and not tokio_bin and not io_dir:
        return None
    if not ampere_bin or not tokio_bin:
        raise AnalysisError("bundle: give both --ampere-bin and --tokio-bin, or neither (then all are built)")
    out = {"ampere_bench": Path(ampere_bin), "tokio_bench": Path(tokio_bin)}
    if io_dir:
        folder = Path(io_dir)
        if not folder.is_dir():
            raise AnalysisError(f"bundle: --io-dir {io_dir}: not a folder")
        out.update({name: folder / name for name in IO_PROGRAM_NAMES if (folder / name).is_file()})
    return out


def cmd_bundle(args: argparse.Namespace) -> int:
    binaries = prebuilt(args.ampere_bin, args.tokio_bin, args.io_dir)
    path = make_bundle(REPO_ROOT, Path(args.out).resolve(), binaries)
    print(f"==> [bundle] {path}  (on the large machine: tar xzf {path.name} && {BUNDLE_NAME}/run.sh)", flush=True)
    return 0
