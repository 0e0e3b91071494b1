"""Child processes that die with the orchestrator, and signals that stop a run cleanly.

Every benchmark program runs
- in its own process group (its own session, so a terminal's Ctrl-C reaches only the
  orchestrator, which then decides), killed as a group (SIGKILL) on the watchdog, on a failure
  and on an interrupt, so that nothing it started outlives it;
- with a parent-death signal (Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`, set in the child between
  fork and exec): if the orchestrator itself is killed (`kill -9`, OOM killer) the kernel kills
  the program too, so no orphan keeps burning CPU or writing into the run's `.staging/`. The
  race "parent died before prctl" is closed by checking the parent pid after the call.
  Limit: the signal reaches the direct child only; the benchmark programs start no processes
  of their own (their threads die with them), and anything that does is still killed with its
  group on every orderly exit.

SIGINT (Ctrl-C) and SIGTERM become `Interrupted` (a BaseException, like KeyboardInterrupt)
inside `interrupts_raise()`, so the run's ordinary unwinding kills the child, records
failed.json and exits 128 + signal number (130, 143). `signals_deferred()` keeps a second
Ctrl-C from breaking that cleanup half-way.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import threading
from typing import Any, Callable, Iterator

#: linux/prctl.h
PR_SET_PDEATHSIG = 1
#: Signals that stop a run: the exit status is 128 + the number (130 for SIGINT, 143 for SIGTERM).
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; `exit_code` = 128 + signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(self.name)


def _load_prctl() -> Callable[..., int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):  # not Linux / no libc: no parent-death signal
        return None


_PRCTL = _load_prctl()


def _die_with(parent_pid: int) -> Callable[[], None]:
    """preexec_fn: SIGKILL this child when the parent dies; exit if it already has."""
    prctl = _PRCTL

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def spawn(command: list[str], **popen: Any) -> subprocess.Popen:
    """Start `command` in a new session / process group with the parent-death signal set."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with(os.getpid()), **popen)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _raise_interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise Interrupted (main thread only: elsewhere
    Python cannot install handlers, and the block changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are ignored (a cleanup that must finish)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
