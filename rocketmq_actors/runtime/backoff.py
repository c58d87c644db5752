"""One restart policy and one back-off for every retry loop in the client.

A :class:`RestartPolicy` says how a supervisor treats a child that exits (how many restarts in
how long before it gives up, and whether giving up escalates to the owner), and how long it
waits between restarts. The same :class:`Backoff` paces every other loop that tries again:
a pull after an error, a subscribed topic without a route yet, a message whose send-back
failed, an orderly queue after a failed batch. Delays grow exponentially from ``initial`` to
``maximum`` and are jittered into the upper half of the nominal delay, so that many loops
failing at once spread out, but none retries sooner than half its nominal delay. A constant
delay is a back-off whose ``initial`` equals its ``maximum`` (and no jitter).
"""

from __future__ import annotations

import random

import anyio
import attrs

from rocketmq_actors.errors import ConfigError

from .checks import check_int, check_timeout

__all__ = ["Backoff", "RestartPolicy", "backoff_delay"]


def backoff_delay(attempt: int, initial: float, maximum: float, rng: random.Random) -> float:
    """Delay before retry number ``attempt`` (0-based): ``initial * 2**attempt`` capped at
    ``maximum``, then jittered uniformly into its upper half."""
    nominal = min(maximum, initial * (2 ** min(attempt, 30)))
    return rng.uniform(nominal / 2, nominal)


class Backoff:
    """The delays of one retry loop: :meth:`next` gives the next one (and counts it),
    :meth:`reset` starts over after a success, :meth:`sleep` waits it."""

    __slots__ = ("_rng", "attempt", "initial", "jitter", "maximum")

    def __init__(
        self,
        initial: float,
        maximum: float | None = None,
        *,
        jitter: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = check_timeout("initial delay", initial, allow_zero=True)
        self.maximum = self.initial if maximum is None else check_timeout("maximum delay", maximum)
        if self.maximum < self.initial:
            raise ConfigError("the maximum delay is below the initial one")
        self.jitter = jitter and self.maximum > 0
        self.attempt = 0
        self._rng = rng or random.Random()

    @classmethod
    def constant(cls, delay: float) -> Backoff:
        return cls(delay, delay, jitter=False)

    def next(self) -> float:
        attempt, self.attempt = self.attempt, self.attempt + 1
        if not self.jitter:
            return min(self.maximum, self.initial * float(2 ** min(attempt, 30)))
        return backoff_delay(attempt, self.initial, self.maximum, self._rng)

    def reset(self) -> None:
        self.attempt = 0

    async def sleep(self) -> float:
        delay = self.next()
        await anyio.sleep(delay)
        return delay


@attrs.frozen(kw_only=True)
class RestartPolicy:
    """More than ``max_restarts`` restarts within ``period`` seconds and the supervisor gives
    up on the child: drops it, or (``escalate``) fails itself and so its owner. Restarts wait
    a :class:`Backoff` from ``backoff_initial`` to ``backoff_max``; a child that ran longer
    than ``period`` starts over at the short delays."""

    max_restarts: int = 5
    period: float = 10.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    escalate: bool = False

    def __attrs_post_init__(self) -> None:
        check_int("max_restarts", self.max_restarts, minimum=0)
        check_timeout("period", self.period)
        check_timeout("backoff_initial", self.backoff_initial, allow_zero=True)
        check_timeout("backoff_max", self.backoff_max, allow_zero=True)

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        return Backoff(self.backoff_initial, max(self.backoff_initial, self.backoff_max), rng=rng)
