"""User callbacks (message handlers, transaction checkers): checked when the client is built.

A callback is an ``async def`` function of one argument, or an object whose ``__call__`` is
one. A plain ``def`` is refused - calling it on the event loop would block every other actor -
unless the caller asks for it to run in a worker thread (``sync=True``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from rocketmq_actors.errors import ConfigError

__all__ = ["as_async_handler"]

A = TypeVar("A")
R = TypeVar("R")


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    return call is not None and inspect.iscoroutinefunction(call)


def _check_arity(fn: Callable[..., Any], name: str) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: cannot tell, accept it
        return
    try:
        signature.bind(object())
    except TypeError:
        raise ConfigError(
            f"{name} {fn!r} must take exactly one positional argument (the "
            f"{'list of messages' if 'batch' in name else 'message'}); its signature is "
            f"{signature}"
        ) from None


def as_async_handler(
    fn: object, *, name: str, sync: bool, limiter: anyio.CapacityLimiter | None = None
) -> Callable[[A], Awaitable[Any]]:
    """``fn`` checked and, with ``sync``, wrapped to run in a worker thread.
    :class:`ConfigError` says what is wrong before the consumer starts."""
    if not callable(fn):
        raise ConfigError(f"{name} must be an async function, not {type(fn).__name__}")
    _check_arity(fn, name)
    if _is_async(fn):
        if sync:
            raise ConfigError(f"{name} {fn!r} is async: sync_handler=True is for plain functions")
        return fn
    if not sync:
        raise ConfigError(
            f"{name} {fn!r} is a plain function: make it 'async def', or pass "
            "sync_handler=True to run it in a worker thread"
        )
    function: Callable[[A], object] = fn

    async def in_thread(arg: A) -> object:
        return await anyio.to_thread.run_sync(functools.partial(function, arg), limiter=limiter)

    return in_thread
