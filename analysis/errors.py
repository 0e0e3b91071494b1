"""Error types of the analysis package.

Every problem with input data (a CSV row, a JSON file, a run folder, a run id) raises
`AnalysisError`, whose `str()` is the complete one-line message without the `error: ` prefix.
The CLI catches it at its boundary, prints `error: <message>` on stderr and exits with code 2,
so bad input never produces a traceback. Library callers (notebooks) get an ordinary exception.
"""

from __future__ import annotations

from pathlib import Path


class AnalysisError(Exception):
    """A problem with input data or arguments that the user must fix (CLI exit code 2)."""


class DataError(AnalysisError):
    """A problem at a known place of a data file: `<file>:<line>: <column>: <problem>`.

    `line` and `column` are optional: a JSON file problem is reported as `<file>: <problem>`.
    """

    def __init__(self, path: Path | str, problem: str, line: int | None = None,
                 column: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.column is not None:
            where += f": {self.column}"
        return f"{where}: {self.problem}"


class RunFailed(Exception):
    """The orchestrator could not complete a run (a step failed): CLI exit code 1, or
    `exit_code` (128 + signal number when SIGINT/SIGTERM stopped it)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
