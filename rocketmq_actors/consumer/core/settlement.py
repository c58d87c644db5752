"""Per-message settlement: what ``message.ack()`` / ``message.nack(delay=...)`` record for the
consume services, and the delay levels.

A push consumer gives each delivered message a fresh :class:`Settlement` (one per delivery: a
message consumed again gets a new one). The explicit call wins over the implicit outcome: an
acked message is committed even if its handler then raises; a nacked one is consumed again
even if the handler returns (or ``async for`` asks for the next). A message of the call left
unsettled takes the handler's outcome (:meth:`Settlement.resolve`): consumed if it returned,
failed if it raised - so a batch handler that nacks one message and returns consumes the
others. Settling twice, or after the delivery ended (the handler returned, the loop moved on,
the consumer is stopping, ``consume_timeout`` passed), raises :class:`MessageAlreadySettled`.

``nack(delay)``: a duration (``int`` or ``float`` seconds, or a ``timedelta``) is mapped to
the smallest delay level at least that long; ``DelayLevel(n)`` names a level (1-18) itself. (A
plain ``int`` is seconds, never a level: ``nack(delay=5)`` waits 5 s, not level 5's minute.)
The levels are the broker's default ``messageDelayLevel`` (``1s 5s 10s 30s 1m 2m 3m 4m 5m 6m
7m 8m 9m 10m 20m 30m 1h 2h``), so a delay longer than 2 h is refused. Concurrent mode sends the
message back (CONSUMER_SEND_MSG_BACK) with that level; orderly mode suspends the queue for the
delay - the level's duration for a ``DelayLevel``, the duration itself for seconds (``int`` or
``float``) or a ``timedelta`` - kept between 10 ms and 30 s as Java's
``ConsumeMessageOrderlyService.submitConsumeRequestLater`` does, and delivers the same message
again.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from datetime import timedelta

from rocketmq_actors.errors import ClientStateError, ConfigError

__all__ = [
    "DELAY_LEVELS",
    "Delay",
    "DelayLevel",
    "MessageAlreadySettled",
    "Outcome",
    "Settlement",
    "SettlementNotSupported",
    "delay_level",
]


class DelayLevel(int):
    """A delay level (1-18) of the broker's ``messageDelayLevel``, given as such:
    ``message.nack(delay=DelayLevel(3))`` is 10 s. Any other number is seconds."""

    __slots__ = ()


Delay = DelayLevel | int | float | timedelta

#: seconds of delay levels 1-18: the broker's default messageDelayLevel (MessageStoreConfig)
DELAY_LEVELS = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800,
                3600, 7200)  # fmt: skip
#: the bounds Java's ConsumeMessageOrderlyService.submitConsumeRequestLater keeps a suspension in
SUSPEND_MIN, SUSPEND_MAX = 0.01, 30.0


ENDED = (
    "the message's delivery has ended: its handler returned (or the loop moved on), the "
    "consumer is stopping, or consume_timeout passed"
)


class MessageAlreadySettled(ClientStateError):
    """``ack``/``nack`` on a message already settled, or whose delivery has ended."""


class SettlementNotSupported(ClientStateError):
    """``ack``/``nack`` on a message no push consumer delivered (a pull consumer's record:
    its offsets are committed instead)."""


class Outcome(enum.Enum):
    ACK = "ack"
    NACK = "nack"
    DEAD = "dead"  # nack(requeue=False): to %DLQ%<group> at once


def delay_level(delay: Delay) -> int:
    """The delay level ``delay`` means (see the module docs); ConfigError naming ``delay``."""
    if isinstance(delay, bool) or not isinstance(delay, int | float | timedelta):
        raise ConfigError(f"delay must be seconds, a timedelta or a DelayLevel: {delay!r}")
    if isinstance(delay, DelayLevel):
        if not 1 <= delay <= len(DELAY_LEVELS):
            raise ConfigError(f"delay level must be 1-{len(DELAY_LEVELS)}, not {int(delay)}")
        return int(delay)
    seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
    if not math.isfinite(seconds) or seconds < 0 or seconds > DELAY_LEVELS[-1]:
        raise ConfigError(f"delay must be 0 to 7200 s (level 18, 2 h), not {seconds} s")
    return next(i for i, s in enumerate(DELAY_LEVELS, 1) if s >= seconds)


def delay_seconds(delay: Delay) -> float:
    """How long ``delay`` is: a level's duration, or the duration given."""
    if isinstance(delay, DelayLevel):
        return float(DELAY_LEVELS[delay_level(delay) - 1])
    delay_level(delay)  # checked
    return delay.total_seconds() if isinstance(delay, timedelta) else float(delay)


class Settlement:
    """One delivery's settlement: set by the application, read by the consume service."""

    __slots__ = ("closed", "delay", "on_settled", "outcome")

    def __init__(self) -> None:
        self.outcome: Outcome | None = None
        self.delay: Delay | None = None
        self.closed = False
        #: ``async for``: wakes the worker waiting for the delivery to end
        self.on_settled: Callable[[Settlement], None] | None = None

    @staticmethod
    def check_delay(delay: Delay) -> None:
        delay_level(delay)

    @property
    def settled(self) -> bool:
        return self.outcome is not None

    def ack(self) -> None:
        self._set(Outcome.ACK, None)

    def nack(self, delay: Delay | None = None, *, requeue: bool = True) -> None:
        if delay is not None:
            delay_level(delay)  # a wrong delay is refused before anything is settled
        self._set(Outcome.NACK if requeue else Outcome.DEAD, delay)

    def _set(self, outcome: Outcome, delay: Delay | None) -> None:
        if self.outcome is not None:
            raise MessageAlreadySettled(f"the message was already settled ({self.outcome.value})")
        if self.closed:
            raise MessageAlreadySettled(ENDED)
        self.outcome, self.delay = outcome, delay
        if self.on_settled is not None:
            self.on_settled(self)

    def resolve(self, implicit: Outcome) -> None:
        """The handler ended (returned: ACK, raised: NACK): an unsettled message takes that
        outcome, so the consume service settles each message by its own ``outcome``.
        (``Dispatcher.invoke_one`` does this inline for the one-message call that
        returned.)"""
        if self.outcome is None:
            self.outcome = implicit

    def close(self) -> None:
        """The delivery has ended: later calls raise."""
        self.closed = True
        self.on_settled = None

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.NACK or self.outcome is Outcome.DEAD

    def level(self, default: int) -> int:
        """The send-back delay level (concurrent mode)."""
        return default if self.delay is None else delay_level(self.delay)

    def suspend(self, default: float) -> float:
        """How long an orderly queue waits before this message is consumed again."""
        seconds = default if self.delay is None else delay_seconds(self.delay)
        return min(SUSPEND_MAX, max(SUSPEND_MIN, seconds))
