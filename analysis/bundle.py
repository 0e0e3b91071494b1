"""`python -m analysis bundle`: a self-contained many-core run for a borrowed large machine.

    python -m analysis bundle [--out build/bundle] [--ampere-bin P --tokio-bin P]

Builds both benchmark programs for x86-64-v3 instead of this machine's CPU (Zig: `zig build
bench-build -Dcpu=x86_64_v3`; Rust: `RUSTFLAGS="-C target-cpu=x86-64-v3"` into its own target
folder, so the native builds stay), and puts them with `scripts/many_core_run.sh` (as `run.sh`)
and the run.json pieces known here (`meta/`: the full profile's constants, each variant's
settings, each program's versions, git commit, whether the program takes --metrics) into
`<out>/ampere-bundle/` and `<out>/ampere-bundle-x86-64-v3.tar.gz`. On the large machine:
`tar xzf ampere-bundle-x86-64-v3.tar.gz && ampere-bundle/run.sh` (bash and coreutils only: no
Python, no network) writes a run folder of the micro suite with the worker sweep 1, 2, 4, ...
up to the core count within a 9-minute budget (the script's header says how). `--ampere-bin`
and `--tokio-bin` take prebuilt programs instead of building (they must be portable builds).
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

from .bench import (CONSTANTS_FILE, VERSION_FIELDS, git_state, iso, load_profile, load_variants,
                    supports_metrics, utc_now)
from .build import REPO_ROOT, python_for
from .errors import AnalysisError, RunFailed
from .files import atomic_writer, write_json_atomic

ZIG_CPU = "x86_64_v3"
RUST_CPU = "x86-64-v3"
BUNDLE_NAME = "ampere-bundle"
ARCHIVE = f"{BUNDLE_NAME}-{RUST_CPU}.tar.gz"
SCRIPT = Path("scripts/many_core_run.sh")
#: The runtimes a bundle can run (run.sh --runtimes): every variant of the two programs.
VARIANTS = ("ampere", "ampere.nospin", "tokio")
PROGRAMS = ("ampere", "tokio")


def build_commands(root: Path, work: Path) -> dict[str, tuple[list[str], dict[str, str], Path]]:
    """Per program: the portable build command, its environment changes and where the binary lands."""
    target = work / "cargo-target"
    return {
        "ampere": ([python_for(root), "-m", "ziglang", "build", "bench-build", f"-Dcpu={ZIG_CPU}", "-p",
                    str(work / "zig")], {}, work / "zig" / "bin" / "ampere_bench"),
        "tokio": (["cargo", "build", "--release", "--quiet", "--manifest-path", str(root / "rust_bench" / "Cargo.toml")],
                  {"RUSTFLAGS": f"-C target-cpu={RUST_CPU}", "CARGO_TARGET_DIR": str(target)},
                  target / "release" / "tokio_bench"),
    }


def build_portable(root: Path, work: Path) -> dict[str, Path]:
    """Build both programs for x86-64-v3 (RunFailed names the step that failed)."""
    out = {}
    for name, (command, extra, binary) in build_commands(root, work).items():
        print(f"==> [bundle] {name}_bench for {RUST_CPU}", flush=True)
        done = subprocess.run(command, cwd=root, env={**os.environ, **extra})
        if done.returncode != 0 or not binary.is_file():
            raise RunFailed(f"bundle: building {name}_bench for {RUST_CPU} failed (exit code {done.returncode})")
        out[name] = binary
    return out


def program_versions(binary: Path, runtime: str) -> dict[str, Any]:
    """What a program is (bench.VERSION_FIELDS of its meta.json), from one tiny run of it here."""
    with tempfile.TemporaryDirectory() as tmp:
        meta, csv = Path(tmp) / "meta.json", Path(tmp) / "rows.csv"
        command = [str(binary), "--variant", runtime, "--quick", "--suite", "micro", "--filter", "floor_cas_store",
                   "--csv", str(csv), "--meta", str(meta)]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=300,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not meta.is_file():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RunFailed(f"bundle: {binary} did not write its meta.json (exit code {done.returncode}: {last})")
        doc = json.loads(meta.read_text(encoding="utf-8"))
    return {k: doc[k] for k in VERSION_FIELDS if doc.get(k) is not None}


def assemble(root: Path, folder: Path, binaries: dict[str, Path]) -> None:
    """The bundle folder: bin/, run.sh, meta/ (see the module doc). `folder` must not exist."""
    missing = [p for p in PROGRAMS if p not in binaries or not Path(binaries[p]).is_file()]
    if missing:
        raise AnalysisError(f"bundle: no {missing[0]}_bench program at {binaries.get(missing[0])}")
    (folder / "bin").mkdir(parents=True)
    (folder / "meta").mkdir()
    for name in PROGRAMS:
        target = folder / "bin" / f"{name}_bench"
        shutil.copy2(binaries[name], target)
        write_json_atomic(folder / "meta" / f"versions.{name}.json", program_versions(target, name))
        if supports_metrics(target):
            (folder / "meta" / f"metrics.{name}").write_text("takes --metrics\n", encoding="utf-8")
    variants = load_variants(root)
    for name in VARIANTS:
        write_json_atomic(folder / "meta" / f"variant.{name}.json", variants[name].record())
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
                       description="Build ampere_bench and tokio_bench for x86-64-v3 and bundle them with run.sh, "
                                   "which runs the micro suite with the worker sweep up to the machine's core count "
                                   "in at most 9 minutes and writes a run folder (bash only: no Python, no network).")
    p.add_argument("--out", default="build/bundle", help="output folder (default build/bundle)")
    p.add_argument("--ampere-bin", help="a prebuilt portable ampere_bench instead of building")
    p.add_argument("--tokio-bin", help="a prebuilt portable tokio_bench instead of building")
    p.set_defaults(func=cmd_bundle)


def cmd_bundle(args: argparse.Namespace) -> int:
    given = {"ampere": args.ampere_bin, "tokio": args.tokio_bin}
    if any(given.values()) and not all(given.values()):
        raise AnalysisError("bundle: give both --ampere-bin and --tokio-bin, or neither (then both are built)")
    binaries = {k: Path(v) for k, v in given.items()} if all(given.values()) else None
    path = make_bundle(REPO_ROOT, Path(args.out).resolve(), binaries)
    print(f"==> [bundle] {path}  (on the large machine: tar xzf {path.name} && {BUNDLE_NAME}/run.sh)", flush=True)
    return 0
