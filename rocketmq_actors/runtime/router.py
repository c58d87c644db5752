"""Delivers broker-initiated requests to the mailbox of the producer or consumer that owns them.

| code | request                         | owner looked up by              | reply            |
|------|---------------------------------|---------------------------------|------------------|
| 39   | CHECK_TRANSACTION_STATE         | producer group = PGROUP of body | one-way          |
| 40   | NOTIFY_CONSUMER_IDS_CHANGED     | header ``consumerGroup``        | one-way          |
| 220  | RESET_CONSUMER_CLIENT_OFFSET    | header ``group``                | one-way          |
| 221  | GET_CONSUMER_STATUS_FROM_CLIENT | header ``group``                | owner replies    |
| 307  | GET_CONSUMER_RUNNING_INFO       | header ``consumerGroup``        | owner replies    |
| 309  | CONSUME_MESSAGE_DIRECTLY        | header ``consumerGroup``        | owner replies    |

Anything else is answered REQUEST_CODE_NOT_SUPPORTED (when it expects an answer). The router
never blocks the connection's reader: a full mailbox is answered SYSTEM_BUSY (or, one-way,
dropped and logged - the broker repeats transaction checks and rebalances run on a timer).
"""

from __future__ import annotations

import attrs

from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import Property
from rocketmq_actors.protocol.records import decode_messages

from .connection import BrokerConnection
from .mailbox import Mailbox, MailboxFull

__all__ = ["Inbound", "Router"]

log = get_logger("rocketmq_actors.runtime")

_CONSUMER_GROUP_FIELD = {
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: "consumerGroup",
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET: "group",
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: "group",
    RequestCode.GET_CONSUMER_RUNNING_INFO: "consumerGroup",
    RequestCode.CONSUME_MESSAGE_DIRECTLY: "consumerGroup",
}


@attrs.frozen
class Inbound:
    """A broker-initiated request as delivered to its owner."""

    connection: BrokerConnection
    command: RemotingCommand

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
    """Owners register a mailbox per group; connections call :meth:`dispatch`."""

    def __init__(self) -> None:
        self._producers: dict[str, Mailbox[Inbound]] = {}
        self._consumers: dict[str, Mailbox[Inbound]] = {}
        self.unsupported = 0
        self.undeliverable = 0

    def register_producer(self, group: str, mailbox: Mailbox[Inbound]) -> None:
        self._producers[group] = mailbox

    def register_consumer(self, group: str, mailbox: Mailbox[Inbound]) -> None:
        self._consumers[group] = mailbox

    def unregister_producer(self, group: str) -> None:
        self._producers.pop(group, None)

    def unregister_consumer(self, group: str) -> None:
        self._consumers.pop(group, None)

    def dispatch(self, connection: BrokerConnection, cmd: RemotingCommand) -> None:
        inbound = Inbound(connection, cmd)
        code = cmd.code
        mailbox: Mailbox[Inbound] | None
        if code == RequestCode.CHECK_TRANSACTION_STATE:
            group = _producer_group_of(cmd)
            mailbox = self._producers.get(group) if group else None
        elif code in _CONSUMER_GROUP_FIELD:
            group = cmd.ext_fields.get(_CONSUMER_GROUP_FIELD[RequestCode(code)])
            mailbox = self._consumers.get(group) if group else None
        else:
            self.unsupported += 1
            log.info("router.unsupported", addr=connection.addr, code=code)
            inbound.reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f"code {code}")
            return
        if mailbox is None:
            self.undeliverable += 1
            log.info("router.no_owner", addr=connection.addr, code=code, group=group)
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"no client of group {group!r} here")
            return
        try:
            mailbox.post_nowait(inbound)
        except MailboxFull:
            self.undeliverable += 1
            log.warning("router.mailbox_full", addr=connection.addr, code=code, group=group)
            inbound.reply(ResponseCode.SYSTEM_BUSY, remark="client busy")


def _producer_group_of(cmd: RemotingCommand) -> str | None:
    try:
        messages = decode_messages(cmd.body)
    except ProtocolError as exc:
        log.warning("router.bad_check_body", reason=exc.reason)
        return None
    return messages[0].properties.get(Property.PGROUP) if messages else None
