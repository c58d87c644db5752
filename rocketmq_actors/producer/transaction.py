"""Transactional messages: a half message, the local transaction, then commit or rollback.

    async def charge(message: Message, arg: object) -> LocalTransactionState: ...
    async def check(message: MessageExt) -> LocalTransactionState: ...  # the broker asks later

    async with TransactionProducer(group="payments", checker=check, topics=["payments"],
                                   namesrv=...) as producer:
        outcome = await producer.send_in_transaction(Message(topic="payments", body=b"..."),
                                                     charge, arg=order)

The half message is stored invisible to consumers. ``execute`` runs after it is stored; its
answer goes to the broker as END_TRANSACTION (one-way). When the answer is UNKNOWN, lost, or the
producer died, the broker later sends CHECK_TRANSACTION_STATE to *any* live producer of the
group: it arrives through this producer's mailbox and ``checker`` decides. Give ``topics`` so a
freshly started producer heartbeats to the brokers at once and can serve checks.

The public :class:`TransactionProducer` is a :class:`~.producer.Producer` with
:meth:`~TransactionProducer.send_in_transaction`; its actor group, :class:`TransactionGroup`,
serves the checks.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.requests import Handler
from rocketmq_actors.errors import InvalidMessage, RocketMQError
from rocketmq_actors.hooks import SendHook
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.events import BrokerRequest, TransactionCheck
from rocketmq_actors.protocol.headers import (
    EndTransactionRequestHeader,
)
from rocketmq_actors.protocol.messages import (
    Message,
    MessageSysFlag,
    Property,
    decode_offset_msg_id,
)
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.callbacks import as_async_handler
from rocketmq_actors.runtime.checks import check_int
from rocketmq_actors.runtime.router import Inbound

from .group import ProducerGroup
from .options import ProducerOptions
from .prepare import check_message
from .producer import Producer
from .result import SendResult, SendStatus
from .sendloop import Routing

__all__ = ["LocalTransactionState", "TransactionGroup", "TransactionOutcome", "TransactionProducer"]

log = get_logger("rocketmq_actors.producer")


class LocalTransactionState(enum.Enum):
    """What a local transaction (and a transaction check) answers: commit the half message,
    roll it back, or not known yet (the broker checks again later)."""

    COMMIT = MessageSysFlag.TRANSACTION_COMMIT  # 8
    ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK  # 12
    UNKNOWN = 0  # the broker will check later


# LocalTransactionState names in Java (an EndTransaction trace record writes them)
_JAVA_STATE = {
    LocalTransactionState.COMMIT: "COMMIT_MESSAGE",
    LocalTransactionState.ROLLBACK: "ROLLBACK_MESSAGE",
    LocalTransactionState.UNKNOWN: "UNKNOW",
}

LocalTransaction = Callable[[Message, Any], Awaitable[LocalTransactionState]]
TransactionChecker = Callable[[MessageExt], Awaitable[LocalTransactionState]]


@attrs.frozen
class TransactionOutcome:
    """What ``send_in_transaction`` returns: the half message's send result and the state the
    local transaction ended in (the one sent to the broker)."""

    send: SendResult
    state: LocalTransactionState


class TransactionGroup(ProducerGroup):
    """A transaction producer's actor group: a producer's, whose mailbox serves the broker's
    transaction checks, ``check_concurrency`` at once."""

    public_name = "TransactionProducer"

    def __init__(
        self, *, checker: TransactionChecker, check_concurrency: int, **producer: Any
    ) -> None:
        super().__init__(**producer)
        self.checker: TransactionChecker = as_async_handler(checker, name="checker", sync=False)
        self.check_concurrency = check_int("check_concurrency", check_concurrency)
        self.checks = 0

    async def send_in_transaction(
        self, message: Message, execute: LocalTransaction, arg: Any = None
    ) -> TransactionOutcome:
        message = check_message(message)
        if message.delay_level or message.deliver_at_ms is not None or message.delay_ms is not None:
            raise InvalidMessage("transactional messages cannot be delayed")
        prepared = self.prepare(
            message,
            extra={Property.TRAN_MSG: "true", Property.PGROUP: self.group},
            sys_flag=MessageSysFlag.TRANSACTION_PREPARED,
        )
        self._check_running()
        started = time.time_ns() // 1_000_000
        sent = await self.send_prepared(prepared, Routing(message), None)
        if self.trace is not None:  # message trace: the half message's Pub record
            self.trace.pub(message, sent, started, half=True)
        if sent.status is not SendStatus.SEND_OK:
            state = LocalTransactionState.ROLLBACK  # stored, but not durably: Java rolls back
        else:
            try:
                state = await execute(message, arg)
            except Exception:
                log.exception("producer.transaction.local_failed", msg_id=sent.msg_id)
                state = LocalTransactionState.UNKNOWN
        await self._end(sent, prepared.topic, state)
        if self.trace is not None:  # message trace: an EndTransaction record
            self.trace.end_transaction(
                topic=message.topic, msg_id=sent.msg_id, tags=message.tags, keys=message.keys,
                store_host=self.trace.store_host(message.topic, sent.queue.broker_name),
                transaction_id=sent.transaction_id, state=_JAVA_STATE[state], from_check=False,
            )  # fmt: skip
        return TransactionOutcome(sent, state)

    async def _end(self, sent: SendResult, topic: str, state: LocalTransactionState) -> None:
        route = await self.route(topic)
        addr = self.master(route, sent.queue)
        _, commit_log_offset = decode_offset_msg_id(sent.offset_msg_id)
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=sent.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=state.value,
            from_transaction_check=False,
            msg_id=sent.msg_id,
            transaction_id=sent.transaction_id,
            topic=topic,
            broker_name=sent.queue.broker_name,
        )
        try:
            await self._instance.oneway(
                addr, RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext())
            )
        except RocketMQError as exc:  # the broker will check: the outcome is not lost
            log.warning("producer.transaction.end_failed", msg_id=sent.msg_id, error=str(exc))

    def _broker_handlers(self) -> dict[type[BrokerRequest], Handler]:
        return {TransactionCheck: self._check_transaction}

    async def _check_transaction(self, inbound: Inbound) -> None:
        event = inbound.event  # decoded once, by the router (protocol.events)
        assert isinstance(event, TransactionCheck)
        header, message = event.header, event.message
        self.checks += 1
        try:
            state = await self.checker(message)
        except Exception:
            log.exception("producer.transaction.check_failed", msg_id=message.msg_id)
            state = LocalTransactionState.UNKNOWN
        uniq = message.properties.get(Property.UNIQ_KEY)
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=state.value,
            from_transaction_check=True,
            msg_id=uniq or header.msg_id or message.offset_msg_id,
            transaction_id=header.transaction_id or uniq,
            broker_name=header.broker_name,
        )
        log.info("producer.transaction.checked", msg_id=end.msg_id, state=state.name)
        try:
            await inbound.connection.oneway(
                RemotingCommand.request(RequestCode.END_TRANSACTION, end.to_ext())
            )
        except RocketMQError as exc:
            log.warning("producer.transaction.check_reply_failed", error=str(exc))
        if self.trace is not None:  # message trace: an EndTransaction record
            self.trace.end_transaction(
                topic=message.topic, msg_id=end.msg_id or "", tags=message.tags,
                keys=message.keys, store_host=inbound.connection.addr,
                transaction_id=end.transaction_id, state=_JAVA_STATE[state], from_check=True,
                region_id=message.properties.get(Property.MSG_REGION),
            )  # fmt: skip


class TransactionProducer(Producer):
    """A :class:`~.producer.Producer` that also sends transactional messages: a half message,
    the local transaction, then commit or rollback (:meth:`send_in_transaction`).

    ``checker(message)``: ``async``, the state of a transaction the broker asks about (its
    answer was UNKNOWN, lost, or its producer died), at most ``check_concurrency`` at once.
    The other arguments are :class:`~.producer.Producer`'s; give ``topics`` so that a freshly
    started producer can serve checks at once.
    """

    _group: TransactionGroup

    def __init__(
        self,
        *,
        checker: TransactionChecker,
        check_concurrency: int = 8,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | Sequence[str] | None = None,
        topics: Sequence[str] = (),
        value_serializer: Callable[[Any], bytes] | None = None,
        options: ProducerOptions = ProducerOptions(),
        client: ClientOptions = ClientOptions(),
        instance: ClientInstance | None = None,
        hooks: Sequence[SendHook] = (),
    ) -> None:
        self._group = TransactionGroup(
            checker=checker, check_concurrency=check_concurrency, group=group, namesrv=namesrv,
            topics=topics, value_serializer=value_serializer, options=options, client=client,
            instance=instance, hooks=hooks,
        )  # fmt: skip

    async def send_in_transaction(
        self, message: Message, execute: LocalTransaction, arg: Any = None
    ) -> TransactionOutcome:
        """Send ``message`` as a half message (stored, invisible to consumers), run
        ``await execute(message, arg)`` - the local transaction - once it is stored, and end
        the transaction as it answers (COMMIT, ROLLBACK, or UNKNOWN: the broker checks
        later; an ``execute`` that raises is UNKNOWN). A half message stored but not durably
        (not SEND_OK) is rolled back without running ``execute``. Returns the send's result
        and the state sent; a delayed message is an ``InvalidMessage``."""
        return await self._group.send_in_transaction(message, execute, arg)
