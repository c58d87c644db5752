"""Requests a broker sends to the client, decoded once into typed events.

:func:`decode_broker_request` turns a received request command into one of the event types
below (headers and bodies decoded and checked here, in the sans-IO layer); the runtime's router
delivers the event to the mailbox of the producer or consumer that owns its group. A request
whose header or body is malformed raises :class:`ProtocolError`; a code the client does not
serve is an :class:`UnsupportedRequest`.

| code | event | owner: the group of |
|------|-------|---------------------|
| 39   | :class:`TransactionCheck`   | the half message's PGROUP property |
| 40   | :class:`ConsumerIdsChanged` | header ``consumerGroup`` |
| 220  | :class:`ResetOffsets`       | header ``group`` |
| 221  | :class:`ConsumerStatusQuery` | header ``group`` |
| 307  | :class:`RunningInfoQuery`   | header ``consumerGroup`` |
| 309  | :class:`ConsumeDirectly`    | header ``consumerGroup`` |
| 326  | :class:`ReplyPushed`        | not a group: the reply's CORRELATION_ID (the owner is the
|      |                             | producer whose request carries it) |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from .bodies import MessageQueue, decode_offset_table
from .codes import RequestCode
from .command import RemotingCommand
from .compression import decompress
from .errors import ProtocolError
from .headers import (
    CheckTransactionStateRequestHeader,
    ConsumeMessageDirectlyRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
)
from .messages import MessageSysFlag, Property, decode_properties
from .records import MessageExt, decode_messages

__all__ = [
    "BrokerRequest",
    "ConsumeDirectly",
    "ConsumerIdsChanged",
    "ConsumerStatusQuery",
    "ReplyMessage",
    "ReplyPushed",
    "ResetOffsets",
    "RunningInfoQuery",
    "TransactionCheck",
    "UnsupportedRequest",
    "decode_broker_request",
]


@attrs.frozen
class BrokerRequest:
    """Base of the events; ``group`` names the owner (empty when the request has none)."""

    group: str


@attrs.frozen
class TransactionCheck(BrokerRequest):
    """CHECK_TRANSACTION_STATE: what became of the local transaction of ``message``?"""

    header: CheckTransactionStateRequestHeader
    message: MessageExt


@attrs.frozen
class ConsumerIdsChanged(BrokerRequest):
    """NOTIFY_CONSUMER_IDS_CHANGED: a member joined or left; rebalance now."""


@attrs.frozen
class ResetOffsets(BrokerRequest):
    """RESET_CONSUMER_CLIENT_OFFSET: restart ``topic``'s queues at these offsets."""

    topic: str
    timestamp: int
    offsets: Mapping[MessageQueue, int]


@attrs.frozen
class ConsumerStatusQuery(BrokerRequest):
    """GET_CONSUMER_STATUS_FROM_CLIENT: this member's offsets of ``topic``."""

    topic: str


@attrs.frozen
class RunningInfoQuery(BrokerRequest):
    """GET_CONSUMER_RUNNING_INFO: this member's subscriptions, queues and properties."""

    client_id: str
    jstack: bool


@attrs.frozen
class ConsumeDirectly(BrokerRequest):
    """CONSUME_MESSAGE_DIRECTLY: run the handler on ``message`` (None if the body held not
    exactly one message)."""

    client_id: str | None
    broker_name: str
    message: MessageExt | None


@attrs.frozen
class ReplyMessage:
    """A reply to ``Producer.request``, as the broker pushed it (body decompressed)."""

    topic: str
    body: bytes
    properties: Mapping[str, str]
    queue_id: int = 0
    flag: int = 0
    born_timestamp: int = 0
    store_timestamp: int = 0
    born_host: str = ""
    store_host: str = ""
    producer_group: str = ""  # the responder's

    @property
    def correlation_id(self) -> str:
        """The request's correlation id this reply answers."""
        return self.properties.get(Property.CORRELATION_ID, "")


@attrs.frozen
class ReplyPushed(BrokerRequest):
    """PUSH_REPLY_MESSAGE_TO_CLIENT: the reply to one of this client's requests; ``group`` is
    its correlation id, under which the requesting producer registered."""

    message: ReplyMessage


@attrs.frozen
class UnsupportedRequest(BrokerRequest):
    """A request code the client does not serve."""

    code: int


def _transaction_check(cmd: RemotingCommand) -> BrokerRequest:
    header = CheckTransactionStateRequestHeader.from_ext(cmd.ext_fields)
    messages = decode_messages(cmd.body, strict=False)
    if not messages:
        raise ProtocolError("bad-body", "a transaction check without its half message")
    group = messages[0].properties.get(Property.PGROUP)
    if not group:
        raise ProtocolError("bad-body", "a half message without its producer group")
    return TransactionCheck(group, header, messages[0])


def _ids_changed(cmd: RemotingCommand) -> BrokerRequest:
    header = NotifyConsumerIdsChangedRequestHeader.from_ext(cmd.ext_fields)
    return ConsumerIdsChanged(header.consumer_group)


def _reset_offsets(cmd: RemotingCommand) -> BrokerRequest:
    header = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
    table = decode_offset_table(cmd.body)
    offsets = {q: o for q, o in table.items() if q.topic == header.topic}
    return ResetOffsets(header.group, header.topic, header.timestamp, offsets)


def _status(cmd: RemotingCommand) -> BrokerRequest:
    header = GetConsumerStatusRequestHeader.from_ext(cmd.ext_fields)
    return ConsumerStatusQuery(header.group, header.topic)


def _running_info(cmd: RemotingCommand) -> BrokerRequest:
    header = GetConsumerRunningInfoRequestHeader.from_ext(cmd.ext_fields)
    return RunningInfoQuery(header.consumer_group, header.client_id, header.jstack_enable)


def _consume_directly(cmd: RemotingCommand) -> BrokerRequest:
    header = ConsumeMessageDirectlyRequestHeader.from_ext(cmd.ext_fields)
    messages = decode_messages(cmd.body, strict=False)
    broker = header.broker_name or cmd.ext_fields.get("brokerName", "")
    message = messages[0] if len(messages) == 1 else None
    if message is not None:
        message.broker_name = broker
    return ConsumeDirectly(header.consumer_group, header.client_id, broker, message)


def _reply(cmd: RemotingCommand) -> BrokerRequest:
    # as Java's ClientRemotingProcessor.receiveReplyMessage: the header carries the reply's
    # send fields, the body is the reply's body (compressed if its sysFlag says so)
    header = ReplyMessageRequestHeader.from_ext(cmd.ext_fields)
    body = cmd.body or b""
    if header.sys_flag & MessageSysFlag.COMPRESSED:
        body = decompress(body, header.sys_flag)
    properties = decode_properties(header.properties or "")
    correlation_id = properties.get(Property.CORRELATION_ID)
    if not correlation_id:
        raise ProtocolError("bad-header-field", "a pushed reply without its CORRELATION_ID")
    message = ReplyMessage(
        topic=header.topic, body=body, properties=properties, queue_id=header.queue_id,
        flag=header.flag, born_timestamp=header.born_timestamp,
        store_timestamp=header.store_timestamp, born_host=(header.born_host or "").lstrip("/"),
        store_host=(header.store_host or "").lstrip("/"), producer_group=header.producer_group,
    )  # fmt: skip
    return ReplyPushed(correlation_id, message)


_DECODERS: dict[int, Callable[[RemotingCommand], BrokerRequest]] = {
    RequestCode.CHECK_TRANSACTION_STATE: _transaction_check,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: _ids_changed,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET: _reset_offsets,
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: _status,
    RequestCode.GET_CONSUMER_RUNNING_INFO: _running_info,
    RequestCode.CONSUME_MESSAGE_DIRECTLY: _consume_directly,
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: _reply,
}


def decode_broker_request(cmd: RemotingCommand) -> BrokerRequest:
    """The typed event of a broker-initiated request (see the module table)."""
    decoder = _DECODERS.get(cmd.code)
    if decoder is None:
        return UnsupportedRequest("", cmd.code)
    return decoder(cmd)
