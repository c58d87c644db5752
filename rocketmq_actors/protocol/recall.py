"""Recall of timer messages (RocketMQ 5.3.2+): the handle and RECALL_MESSAGE's headers.

A broker answers the send of a timer message with a ``recallHandle`` (SendMessageProcessor
``attachRecallHandle``): Java's ``RecallMessageHandle.HandleV1``, the URL-safe Base64 (padded)
of ``"v1 <topic> <brokerName> <deliver-at ms + 1> <unique message id>"``, space-separated.
RECALL_MESSAGE (370) gives it back to the broker named in it, which then writes a delete
marker for the message into its timer store (``RecallMessageProcessor``).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Self

import attrs

from .errors import ProtocolError
from .headers import Header, wire

__all__ = ["RecallHandle", "RecallMessageRequestHeader", "RecallMessageResponseHeader"]

_VERSION_1 = "v1"
# java.util.Base64.getUrlDecoder: the URL-safe alphabet, padding optional but never wrong
_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]+={0,2}")


@attrs.frozen(kw_only=True)
class RecallHandle:
    """A decoded recall handle: the (namespaced) topic, the broker that stored the message,
    the delivery time the broker computed, in ms (``TIMER_OUT_MS`` plus one), and the
    message's unique id (its ``UNIQ_KEY``, the send result's ``msg_id``)."""

    topic: str
    broker_name: str
    deliver_at_ms: int
    msg_id: str

    def encode(self) -> str:
        """The handle as a broker builds it (``HandleV1.buildHandle``)."""
        raw = " ".join((_VERSION_1, self.topic, self.broker_name, str(self.deliver_at_ms),
                        self.msg_id))  # fmt: skip
        return base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    @classmethod
    def decode(cls, handle: object) -> Self:
        """The handle's parts, as ``RecallMessageHandle.decodeHandle`` reads them (the fields
        after the fifth are ignored there too); stricter than Java in one way: an empty part or
        a delivery time that is not a number (which the broker would refuse) is refused here,
        before it is sent. :class:`ProtocolError` for anything that is not a v1 handle."""
        if not isinstance(handle, str):
            raise ProtocolError("bad-recall-handle", f"a str, not {type(handle).__name__}")
        if not _URL_BASE64.fullmatch(handle):
            raise ProtocolError("bad-recall-handle", "not URL-safe Base64")
        try:
            raw = base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise ProtocolError("bad-recall-handle", "not Base64 of UTF-8 text") from None
        items = raw.split(" ")
        if items[0] != _VERSION_1 or len(items) < 5:
            raise ProtocolError("bad-recall-handle", "not a v1 handle")
        topic, broker_name, deliver_at, msg_id = items[1:5]
        if not (topic and broker_name and msg_id):
            raise ProtocolError("bad-recall-handle", "an empty topic, broker or message id")
        try:
            deliver_at_ms = int(deliver_at)
        except ValueError:
            raise ProtocolError("bad-recall-handle", f"time {deliver_at!r} is no number") from None
        return cls(topic=topic, broker_name=broker_name, deliver_at_ms=deliver_at_ms,
                   msg_id=msg_id)  # fmt: skip


@attrs.define(kw_only=True, slots=True)
class RecallMessageRequestHeader(Header):
    """RECALL_MESSAGE (370); ``bname`` (RpcRequestHeader's broker name) is the handle's."""

    producer_group: str | None = wire("producerGroup", default=None)
    topic: str = wire("topic")
    recall_handle: str = wire("recallHandle")
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class RecallMessageResponseHeader(Header):
    """The recalled message's unique id (the broker's answer copies the handle's)."""

    msg_id: str = wire("msgId")
