"""Progress on long CLI work: a rich bar on a terminal, plain lines otherwise.

``--json`` output stays clean: progress only ever goes to stderr. Without the ``cli`` extra
(rich), or when stderr is not a terminal, a line is written every ``every`` items instead
(on a terminal, after a first line naming the extra that gives the bar).
"""

from __future__ import annotations

import argparse
import sys
import time
from types import TracebackType
from typing import IO, Any

from rocketmq_actors.extras import MissingExtra

try:  # optional: the `cli` extra
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
except ImportError:  # pragma: no cover - exercised only without the extra
    Console = None  # type: ignore[assignment,misc]


class ProgressReport:
    """``with ProgressReport("sent", total=n) as bar: bar.advance()`` (total None: open-ended)."""

    def __init__(
        self,
        label: str,
        *,
        total: int | None,
        enabled: bool = True,
        stream: IO[str] | None = None,
        force_terminal: bool | None = None,
        every: int = 10_000,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = enabled
        self._every = every
        self._next_line = every
        self._started = time.monotonic()
        terminal = force_terminal if force_terminal is not None else self._stream.isatty()
        self._rich: Any = None
        if enabled and terminal and Console is None:  # plain lines; say what gives the bar
            hint = MissingExtra("rich", "cli", "a progress bar")
            self._stream.write(f"rocketmq-actors: {hint} (plain lines meanwhile)\n")
        elif enabled and terminal and Console is not None:
            console = Console(file=self._stream, force_terminal=True)
            self._rich = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn() if total else TextColumn("{task.completed}"),
                TaskProgressColumn() if total else TextColumn(""),
                TimeElapsedColumn(),
                TextColumn("{task.fields[rate]}"),
                console=console,
                transient=False,
            )
            self._task = self._rich.add_task(label, total=total, rate="")

    def __enter__(self) -> ProgressReport:
        if self._rich is not None:
            self._rich.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._rich is not None:
            self._rich.update(self._task, rate=self._rate())
            self._rich.stop()

    def _rate(self) -> str:
        elapsed = time.monotonic() - self._started
        return f"{self.done / elapsed:,.0f}/s" if elapsed > 0 else ""

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self._enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, advance=n, rate=self._rate())
        elif self.done >= self._next_line:
            of = f"/{self.total}" if self.total else ""
            self._stream.write(f"{self.label} {self.done}{of} ({self._rate()})\n")
            self._next_line = (self.done // self._every + 1) * self._every


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="no progress on stderr (also off with --json)",
    )
