"""The live supervision tree, as data: what :meth:`tree` of a client returns.

Every actor describes itself as a :class:`Node`: a name (``connection[127.0.0.1:10911]``,
``queue[orders@broker-a:3]``), a kind (what sort of actor it is, the same for every queue), its
state, how often its supervisor restarted it and the last error it exited with, the depth of
its mailbox when it has one, a few figures of its own, and its children.
:meth:`Node.render` draws it as the diagrams in docs/architecture.md are drawn.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import attrs

__all__ = ["Describable", "Node"]


@attrs.frozen
class Node:
    name: str
    kind: str
    state: str = "running"
    restarts: int = 0
    last_error: str | None = None
    mailbox: int | None = None  # items waiting in its mailbox
    info: Mapping[str, Any] = attrs.field(factory=dict)
    children: tuple[Node, ...] = ()

    def walk(self) -> Iterator[Node]:
        """This node, then its descendants, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, kind: str) -> list[Node]:
        return [node for node in self.walk() if node.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "state": self.state,
                               "restarts": self.restarts}  # fmt: skip
        if self.last_error is not None:
            out["last_error"] = self.last_error
        if self.mailbox is not None:
            out["mailbox"] = self.mailbox
        if self.info:
            out["info"] = dict(self.info)
        if self.children:
            out["children"] = [child.to_dict() for child in self.children]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Node:
        return cls(
            name=str(data["name"]), kind=str(data["kind"]), state=str(data.get("state", "")),
            restarts=int(data.get("restarts", 0)), last_error=data.get("last_error"),
            mailbox=data.get("mailbox"), info=dict(data.get("info", {})),
            children=tuple(cls.from_dict(c) for c in data.get("children", ())),
        )  # fmt: skip

    def render(self, *, details: bool = True) -> str:
        """An indented drawing of the tree; ``details=False`` keeps only the kinds (the shape,
        which the architecture document's diagram is checked against)."""
        lines: list[str] = []
        self._render(lines, "", "", details)
        return "\n".join(lines)

    def _label(self, details: bool) -> str:
        if not details:
            return self.kind
        parts = [self.name]
        if self.state != "running":
            parts.append(f"[{self.state}]")
        if self.restarts:
            parts.append(f"restarts={self.restarts}")
        if self.mailbox is not None:
            parts.append(f"mailbox={self.mailbox}")
        parts.extend(f"{key}={value}" for key, value in self.info.items())
        if self.last_error:
            parts.append(f"last_error={self.last_error}")
        return " ".join(parts)

    def _render(self, lines: list[str], head: str, tail: str, details: bool) -> None:
        lines.append(head + self._label(details))
        children = self.children
        if not details:  # the shape: one node per kind among siblings
            seen: dict[str, Node] = {}
            for child in children:
                seen.setdefault(child.kind, child)
            children = tuple(seen.values())
        for i, child in enumerate(children):
            last = i == len(children) - 1
            child._render(lines, tail + ("└─ " if last else "├─ "),
                          tail + ("   " if last else "│  "), details)  # fmt: skip


class Describable(Protocol):
    def describe(self) -> Node: ...
