"""Waiting for what a broker does after it has answered (shared by the integration tests)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def until(fetch: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    """``fetch()`` again until ``done`` holds, bounded at 30 s: a broker dispatches a stored
    message to its consume queue and indexes its keys asynchronously, after the send's
    reply (ReputMessageService, IndexService)."""
    with anyio.fail_after(30):
        while True:
            value = await fetch()
            if done(value):
                return value
            await anyio.sleep(0.2)
