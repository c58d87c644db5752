"""A registry of live actors by unique key (a broker connection by ``host:port``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

import anyio

__all__ = ["Registry"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Registry(Generic[K, V]):
    """Unique keys to values. ``lock(key)`` serializes get-or-start per key, so many callers
    asking for the same key at once start one actor."""

    def __init__(self) -> None:
        self._entries: dict[K, V] = {}
        #: ``lookup(key)``: the value, or None (the dictionary's own ``get``: no frame of ours
        #: on the send path)
        self.lookup: Callable[[K], V | None] = self._entries.get
        self._locks: dict[K, anyio.Lock] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))

    def register(self, key: K, value: V) -> None:
        if key in self._entries:
            raise KeyError(f"{key!r} is already registered")
        self._entries[key] = value

    def unregister(self, key: K, value: V | None = None) -> None:
        """Remove ``key`` (only if it still maps to ``value``, when given)."""
        current = self._entries.get(key)
        if current is not None and (value is None or current is value):
            del self._entries[key]

    def lock(self, key: K) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock
