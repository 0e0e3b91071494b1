"""Files in and out.

Out: atomic writes. Every file the lab writes (run folders, reports, generated docs) goes
through a temporary file in the same folder, is flushed to disk, and is renamed into place, so
a reader never sees half a file and a failed write leaves the old file intact.

In: `read_input_text`, the one reader of the line-oriented files a benchmark program wrote
(CSV, metrics JSON lines): any read or decoding problem is a one-line `DataError`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from .errors import DataError

BOM = "\ufeff"


def is_symlink_loop(path: Path | str) -> bool:
    """True when following `path`'s symbolic links never ends (ELOOP): a link to itself, or
    links that point at each other."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def symlink_loop_problem(path: Path | str) -> str:
    """The one-line problem of a symbolic link loop at `path` (for DataError)."""
    try:
        target = f" (it points to {os.readlink(path)!r})"
    except OSError:
        target = ""
    return f"symbolic link loop{target}: following its links never reaches a file or folder"


def check_no_symlink_loop(path: Path | str) -> None:
    """DataError naming `path` when it, or a link on its way, is a symbolic link loop."""
    if is_symlink_loop(path):
        raise DataError(path, symlink_loop_problem(path))


def read_input_text(path: Path, kind: str) -> str:
    """The file as text: UTF-8 decoded, a leading BOM removed, CRLF turned into LF (possibly
    empty). `kind` names what the file should be ("a CSV file") in the error for a folder."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, f"is a directory, not {kind}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(path, symlink_loop_problem(path)) from None
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, "not valid UTF-8", raw[: exc.start].count(b"\n") + 1) from None
    text = text.removeprefix(BOM)
    return text.replace("\r\n", "\n") if "\r" in text else text


def file_mode() -> int:
    """The mode a plainly created file gets (0o666 minus the umask); mkstemp uses 0o600."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_writer(path: Path, binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write that becomes `path` (flushed, synced, renamed into place) when the block
    ends; if the block raises, the temporary file is removed and `path` is left as it was.
    Text mode is UTF-8 with no newline translation."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write text to `path` via a temporary file in the same folder and a rename."""
    with atomic_writer(path) as out:
        out.write(text)


def write_json_atomic(path: Path, value: Any) -> None:
    """`value` as indented JSON (key order kept), written atomically."""
    write_text_atomic(path, json.dumps(value, indent=2) + "\n")
