"""Delivers requests the broker sends to the client to the mailbox of their owner.

A request is decoded once, in the sans-IO layer (:func:`~rocketmq_actors.protocol.events.
decode_broker_request`), into a typed event that names its group. Owners register a mailbox
per event type and group (a transaction producer for
:class:`~rocketmq_actors.protocol.events.TransactionCheck`, a consumer for the five consumer
events; a requesting producer for :class:`~rocketmq_actors.protocol.events.ReplyPushed`,
under each pending request's correlation id instead of a group), and the router posts an
:class:`Inbound` - the event, the request and a way to answer it - to the matching mailbox.

The router never blocks the connection's reader: a full mailbox is answered SYSTEM_BUSY (or,
one-way, dropped and logged - the broker repeats transaction checks and rebalances run on a
timer); a malformed request is answered SYSTEM_ERROR; a code nobody serves
REQUEST_CODE_NOT_SUPPORTED; a group nobody here owns SYSTEM_ERROR, but for a reply to a
request that no longer waits (it timed out): SUCCESS, dropped and counted, as the Java client
answers it (``ClientRemotingProcessor.receiveReplyMessage``), so that the replier's send of it
does not fail.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.events import (
    BrokerRequest,
    ConsumeDirectly,
    ConsumerIdsChanged,
    ConsumerStatusQuery,
    ReplyPushed,
    ResetOffsets,
    RunningInfoQuery,
    TransactionCheck,
    UnsupportedRequest,
    decode_broker_request,
)

from .connection import BrokerConnection
from .mailbox import Mailbox, MailboxFull
from .tree import Node

__all__ = ["CONSUMER_EVENTS", "PRODUCER_EVENTS", "REPLY_EVENTS", "Inbound", "Router"]

log = get_logger("rocketmq_actors.runtime")

PRODUCER_EVENTS: tuple[type[BrokerRequest], ...] = (TransactionCheck,)
#: registered per pending request, under its correlation id (``producer.requestreply``)
REPLY_EVENTS: tuple[type[BrokerRequest], ...] = (ReplyPushed,)
CONSUMER_EVENTS: tuple[type[BrokerRequest], ...] = (
    ConsumerIdsChanged,
    ResetOffsets,
    ConsumerStatusQuery,
    RunningInfoQuery,
    ConsumeDirectly,
)


@attrs.frozen
class Inbound:
    """A broker-initiated request as delivered to its owner: the typed ``event``, the raw
    ``command`` and the ``connection`` it came on."""

    connection: BrokerConnection
    command: RemotingCommand
    event: BrokerRequest

    def reply(
        self,
        code: int = ResponseCode.SUCCESS,
        *,
        body: bytes = b"",
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
    ) -> None:
        """Answer the broker (ignored for one-way requests, which expect no answer)."""
        if not self.command.is_oneway:
            self.connection.send_response(
                self.command.response(code, body=body, remark=remark, ext_fields=ext_fields)
            )


class Router:
    """Owners :meth:`register` a mailbox per event type and group; connections call
    :meth:`dispatch` with every request they receive."""

    def __init__(self) -> None:
        self._owners: dict[tuple[type[BrokerRequest], str], Mailbox[Inbound]] = {}
        self.unsupported = 0
        self.undeliverable = 0
        self.malformed = 0
        self.late_replies = 0  # replies to requests that no longer waited

    def register(
        self, events: Iterable[type[BrokerRequest]], group: str, mailbox: Mailbox[Inbound]
    ) -> None:
        for event in events:
            self._owners[(event, group)] = mailbox

    def unregister(self, events: Iterable[type[BrokerRequest]], group: str) -> None:
        for event in events:
            self._owners.pop((event, group), None)

    def describe(self) -> Node:
        return Node(name="router", kind="router", info={
            "owners": len(self._owners), "unsupported": self.unsupported,
            "undeliverable": self.undeliverable, "malformed": self.malformed,
            "late_replies": self.late_replies,
        })  # fmt: skip

    def dispatch(self, connection: BrokerConnection, cmd: RemotingCommand) -> None:
        try:
            event = decode_broker_request(cmd)
        except ProtocolError as exc:
            self.malformed += 1
            log.warning("router.bad_request", addr=connection.addr, code=cmd.code,
                        reason=exc.reason, detail=exc.detail)  # fmt: skip
            if not cmd.is_oneway:
                connection.send_response(cmd.response(ResponseCode.SYSTEM_ERROR,
                                                      remark=f"bad request: {exc}"))  # fmt: skip
            return
        inbound = Inbound(connection, cmd, event)
        if isinstance(event, UnsupportedRequest):
            self.unsupported += 1
            log.info("router.unsupported", addr=connection.addr, code=cmd.code)
            inbound.reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f"code {cmd.code}")
            return
        mailbox = self._owners.get((type(event), event.group))
        if mailbox is None:
            self.undeliverable += 1
            log.info("router.no_owner", addr=connection.addr, code=cmd.code, group=event.group)
            if isinstance(event, ReplyPushed):  # a late reply: dropped, as Java does
                self.late_replies += 1
                inbound.reply(ResponseCode.SUCCESS)
                return
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"no client of group {event.group!r}")
            return
        try:
            mailbox.post_nowait(inbound)
        except MailboxFull:
            self.undeliverable += 1
            log.warning("router.mailbox_full", addr=connection.addr, code=cmd.code,
                        group=event.group)  # fmt: skip
            inbound.reply(ResponseCode.SYSTEM_BUSY, remark="client busy")
