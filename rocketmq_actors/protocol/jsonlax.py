"""A JSON reader for the fastjson dialect RocketMQ servers write.

Two constructs are not standard JSON and appear in real bodies:

* unquoted integer map keys: ``{"brokerAddrs":{0:"127.0.0.1:10911"}}`` (route data for old
  clients, cluster info always);
* object map keys: ``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:42}}``
  (reset offset, consumer status, running info).

:func:`loads` tries the C-accelerated standard parser first and falls back to a small
recursive-descent parser that accepts any JSON value in key position. Object keys become
:class:`FrozenObject` (a hashable, read-only mapping). Errors are :class:`ProtocolError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import ProtocolError

__all__ = ["FrozenObject", "loads"]

# The C-accelerated string scanner of the standard json module (not in typeshed).
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_MAX_DEPTH = 64
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class FrozenObject(Mapping[str, Any]):
    """A JSON object used as a map key: hashable, compares by content."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._items = dict(items)
        self._hash = hash(tuple(sorted((k, _freeze(v)) for k, v in self._items.items())))

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenObject):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenObject({self._items!r})"


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenObject(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def loads(data: bytes | str) -> Any:
    """Parse a standard or fastjson-dialect JSON document."""
    try:
        text = data.decode() if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as exc:
        raise ProtocolError("bad-json", f"invalid UTF-8: {exc}") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    parser = _Parser(text)
    value = parser.value(0)
    parser.skip_ws()
    if parser.pos != len(text):
        raise ProtocolError("bad-json", f"trailing data at offset {parser.pos}")
    return value


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        match = _WS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def fail(self, what: str) -> ProtocolError:
        return ProtocolError("bad-json", f"{what} at offset {self.pos}")

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep")
        self.skip_ws()
        text = self.text
        if self.pos >= len(text):
            raise self.fail("unexpected end of input")
        ch = text[self.pos]
        if ch == "{":
            return self.obj(depth)
        if ch == "[":
            return self.arr(depth)
        if ch == '"':
            try:
                value, self.pos = _scanstring(text, self.pos + 1, True)
            except ValueError:
                raise self.fail("bad string") from None
            return value
        for literal, result in (("true", True), ("false", False), ("null", None)):
            if text.startswith(literal, self.pos):
                self.pos += len(literal)
                return result
        match = _NUMBER.match(text, self.pos)
        if match is None:
            raise self.fail(f"unexpected character {ch!r}")
        self.pos = match.end()
        if match.group(1) or match.group(2):
            return float(match.group(0))
        return int(match.group(0))

    def _expect(self, ch: str) -> None:
        self.skip_ws()
        if self.pos >= len(self.text) or self.text[self.pos] != ch:
            raise self.fail(f"expected {ch!r}")
        self.pos += 1

    def _peek(self, ch: str) -> bool:
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] == ch:
            self.pos += 1
            return True
        return False

    def obj(self, depth: int) -> dict[Any, Any]:
        self.pos += 1
        out: dict[Any, Any] = {}
        if self._peek("}"):
            return out
        while True:
            key = _freeze(self.value(depth + 1))
            self._expect(":")
            out[key] = self.value(depth + 1)
            if self._peek("}"):
                return out
            self._expect(",")

    def arr(self, depth: int) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        if self._peek("]"):
            return out
        while True:
            out.append(self.value(depth + 1))
            if self._peek("]"):
                return out
            self._expect(",")


def dumps(value: Any) -> bytes:
    """Serialize like fastjson: standard JSON, except that a map key may be an object
    (a :class:`~collections.abc.Mapping`), written as a JSON object in key position. Keys of
    plain maps are sorted as fastjson does for bean fields."""
    parts: list[str] = []
    _dump(value, parts)
    return "".join(parts).encode()


def _dump(value: Any, out: list[str]) -> None:
    if isinstance(value, Mapping):
        out.append("{")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            if isinstance(key, Mapping):
                _dump(key, out)
            else:
                out.append(json.dumps(key if isinstance(key, str) else str(key)))
            out.append(":")
            _dump(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple, set, frozenset)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _dump(item, out)
        out.append("]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))
