"""Argument checks shared by every client's constructor: a wrong value is a
:class:`~rocketmq_actors.errors.ConfigError` naming the argument, before any I/O."""

from __future__ import annotations

import math

from rocketmq_actors.errors import ConfigError

__all__ = ["check_int", "check_timeout"]


def check_timeout(name: str, value: float, *, allow_zero: bool = False) -> float:
    """``value`` as a float if it is a finite number of seconds above zero (or zero, with
    ``allow_zero``); otherwise :class:`ConfigError` (NaN and infinity included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} must be a finite number of seconds {bound}, not {value!r}")
    return float(value)


def check_int(name: str, value: int, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` if it is an ``int`` within ``[minimum, maximum]``; otherwise
    :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, not {type(value).__name__}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ConfigError(f"{name} must be {bound}, not {value}")
    return value
