"""Slack for a timing bound, from the machine's measured scheduling delay.

A test that holds the client to a deadline (``send`` returns within ``attempt_timeout``, a stop
within its shutdown timeout) measures how long the call took. On a busy machine that figure
also holds the time the process waited for a core: each wake-up on the way (a timer, a reply
read, the test's task resumed) may come late. The bound is the contract plus
:func:`slack`: a small floor for the work itself, plus a multiple of the worst wake-up delay
this process saw while the call ran, measured by a thread that sleeps in short steps and
records how late it woke (``time.sleep`` overshoot: the run-queue wait on this machine, now).
On a quiet machine the slack is the floor; on a loaded one it grows with the load, so the
bound stays a bound on the client and never a bet on the machine.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["SchedulingProbe", "delay_since", "slack"]

#: how often the probe wakes (seconds)
PERIOD = 0.01
#: how long samples are kept (seconds): longer than any bound a test checks
KEEP = 600.0


class SchedulingProbe:
    """Records, for each wake-up, when it happened and how late it was."""

    def __init__(
        self,
        period: float = PERIOD,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.period = period
        self._clock = clock
        self._sleep = sleep
        self._samples: deque[tuple[float, float]] = deque()  # (woke at, late by)
        self._expected = clock() + period
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._expected = self._clock() + self.period
            self._thread = threading.Thread(target=self._run, name="scheduling-probe", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._sleep(self.period)
            self.tick()

    def tick(self) -> None:
        """One wake-up: record how late it came (the thread calls it; tests call it directly)."""
        now = self._clock()
        with self._lock:
            self._samples.append((now, max(0.0, now - self._expected)))
            while self._samples and self._samples[0][0] < now - KEEP:
                self._samples.popleft()
            self._expected = now + self.period

    def delay_since(self, since: float) -> float:
        """The worst wake-up delay seen since ``since`` (a ``time.monotonic()`` value),
        counting a wake-up that is overdue right now."""
        now = self._clock()
        with self._lock:
            worst = max(0.0, now - self._expected)
            for at, late in reversed(self._samples):
                if at < since:
                    break
                worst = max(worst, late)
        return worst


_PROBE = SchedulingProbe()


def delay_since(since: float) -> float:
    """The worst scheduling delay this process saw since ``since`` (``time.monotonic()``)."""
    _PROBE.start()
    return _PROBE.delay_since(since)


def slack(since: float, *, wakeups: int = 5, floor: float = 0.3) -> float:
    """Slack for a bound on something that began at ``since``: ``floor`` seconds for the work,
    plus ``wakeups`` times the worst wake-up delay seen since then (the wake-ups on the
    measured path, each of which may come that late)."""
    return floor + wakeups * delay_since(since)


def start() -> None:
    """Start measuring (the test session does it at its start, so every bound has samples)."""
    _PROBE.start()
