"""QUERY_ASSIGNMENT (400, 5.x brokers): the queues a broker assigns to one member of a group,
each with the request mode an operator set for the group (SET_MESSAGE_REQUEST_MODE, 401).

A member that follows the broker's mode (Java's ``setClientRebalance(false)``) sends Java's
``QueryAssignmentRequestBody`` and reads a ``QueryAssignmentResponseBody``: a set of
``MessageQueueAssignment`` (a queue, ``"PULL"`` or ``"POP"``, attachments). A POP assignment
whose queue id is -1 means every queue of that broker, popped as one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import attrs

from .bodies import MessageQueue, _body_decoder, _field, _object
from .errors import ProtocolError

__all__ = ["Assignment", "decode_assignments", "encode_query_assignment"]

PULL, POP = "PULL", "POP"


@attrs.frozen
class Assignment:
    """One queue the broker assigned, and how to read it (``"PULL"`` or ``"POP"``)."""

    queue: MessageQueue
    mode: str


def encode_query_assignment(
    topic: str, group: str, client_id: str, strategy: str, model: str
) -> bytes:
    """The request body (``model``: ``"CLUSTERING"`` or ``"BROADCASTING"``; ``strategy``: a
    name the broker knows, ``"AVG"`` or ``"AVG_BY_CIRCLE"``)."""
    return json.dumps({"topic": topic, "consumerGroup": group, "clientId": client_id,
                       "strategyName": strategy, "messageModel": model}).encode()  # fmt: skip


@_body_decoder
def decode_assignments(body: bytes) -> list[Assignment] | None:
    """The reply: the assignments, or None when the broker could not compute them (an unknown
    topic or group, a strategy it does not know: Java then keeps what it has)."""
    rows = _object(body, "query assignment").get("messageQueueAssignments")
    if rows is None:
        return None
    if not isinstance(rows, list):
        raise ProtocolError("bad-body", "messageQueueAssignments is not a list")
    out: list[Assignment] = []
    for row in rows:
        if not isinstance(row, Mapping):
            raise ProtocolError("bad-body", "a message queue assignment is not an object")
        queue = row.get("messageQueue")
        if queue is None:  # (Java skips one without a queue)
            continue
        mode = str(_field(row, "mode", str, PULL))
        if mode not in (PULL, POP):
            raise ProtocolError("bad-body", f"unknown message request mode {mode!r}")
        out.append(Assignment(MessageQueue.from_json(queue), mode))
    return out
