"""PushConsumer: a consumer group member that pulls its share of queues and calls a handler.

    async def handle(message: MessageExt) -> None:
        ...                          # raising means "consume later" (retry)

    async with PushConsumer(namesrv="127.0.0.1:9876", group="billing",
                            subscriptions={"orders": "paid || refunded"}, handler=handle):
        await anyio.sleep_forever()

The actors under it (all in the consumer's task group):

* a rebalancer - every ``rebalance_interval`` and at once when the broker sends
  NOTIFY_CONSUMER_IDS_CHANGED to the mailbox - allocates queues (clustering: with the group's
  strategy over the group's client ids; broadcasting: all of them) and starts or releases them;
* one pull loop per owned queue: long polling, per-queue flow control (cached messages, bytes,
  offset span), messages into the process queue and onto the work channel;
* ``concurrency`` workers calling the handler; a success removes the message from its process
  queue and moves the queue's offset to the smallest offset not yet consumed;
* an offset persister every ``persist_interval`` (and on release and close).

A handler failure in clustering mode sends the message back to the broker
(CONSUMER_SEND_MSG_BACK), which redelivers it through ``%RETRY%<group>`` with growing delays and
moves it to ``%DLQ%<group>`` after ``max_reconsume_times``. If the send-back itself fails, the
message is consumed again locally after ``local_retry_delay``: never dropped. In broadcasting
mode a failed message is logged and skipped, as the Java client does.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.errors import RocketMQError, TopicNotFound
from rocketmq_actors.producer.prepare import validate_group, validate_topic, wrap
from rocketmq_actors.protocol.bodies import ConsumerData, MessageQueue, decode_consumer_list
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
)
from rocketmq_actors.protocol.messages import Property
from rocketmq_actors.protocol.records import MessageExt

from .offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from .process_queue import ProcessQueue
from .pull import PullStatus, Subscription, max_offset, offset_for_time, pull_once
from .rebalance import Strategy, allocate

__all__ = ["ConsumeFrom", "MessageModel", "PushConsumer"]

log = structlog.get_logger("rocketmq_actors.consumer")

Handler = Callable[[MessageExt], Awaitable[None]]


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFrom(enum.Enum):
    """Where a group with no committed offset starts."""

    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class PushConsumer(GroupMember):
    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str,
        subscriptions: Mapping[str, str],
        handler: Handler,
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        model: MessageModel = MessageModel.CLUSTERING,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        strategy: Strategy = Strategy.AVG,
        concurrency: int = 20,
        pull_batch_size: int = 32,
        max_cached_messages: int = 1000,
        max_cached_bytes: int = 100 * 1024 * 1024,
        max_span: int = 2000,
        max_reconsume_times: int = 16,
        retry_delay_level: int = 0,
        local_retry_delay: float = 5.0,
        rebalance_interval: float = 20.0,
        persist_interval: float = 5.0,
        pull_suspend: float = 15.0,
        offset_dir: Path | str | None = None,
        request_timeout: float = 3.0,
        on_rebalance: Callable[[list[MessageQueue]], None] | None = None,
    ) -> None:
        validate_group(group)
        if not subscriptions:
            raise ValueError("subscribe to at least one topic")
        for topic in subscriptions:
            validate_topic(topic)
        super().__init__(
            kind="push-consumer", group=wrap(namespace, group), namesrv=namesrv, instance=instance
        )
        if concurrency < 1 or pull_batch_size < 1 or max_cached_messages < 1:
            raise ValueError("concurrency, pull_batch_size and max_cached_messages must be >= 1")
        if consume_from is ConsumeFrom.TIMESTAMP and consume_timestamp_ms is None:
            consume_timestamp_ms = int((time.time() - 1800) * 1000)  # Java: 30 minutes ago
        self.model = model
        self.handler = handler
        self.consume_from = consume_from
        self.consume_timestamp_ms = consume_timestamp_ms
        self.strategy = strategy
        self.concurrency = concurrency
        self.pull_batch_size = pull_batch_size
        self.max_cached_messages = max_cached_messages
        self.max_cached_bytes = max_cached_bytes
        self.max_span = max_span
        self.max_reconsume_times = max_reconsume_times
        self.retry_delay_level = retry_delay_level
        self.local_retry_delay = local_retry_delay
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.pull_suspend = pull_suspend
        self.request_timeout = request_timeout
        self.on_rebalance = on_rebalance
        self._subscriptions = {
            wrap(namespace, t): Subscription.parse(wrap(namespace, t), e)
            for t, e in subscriptions.items()
        }
        self.retry_topic = f"%RETRY%{self.group}"
        if model is MessageModel.CLUSTERING:
            self._subscriptions[self.retry_topic] = Subscription.parse(self.retry_topic)
        self._sub_version = time.time_ns() // 1_000_000
        self.offsets: OffsetStore = (
            RemoteOffsetStore(self._instance, self.group)
            if model is MessageModel.CLUSTERING
            else LocalOffsetStore(
                offset_dir or Path.home() / ".rocketmq_actors" / "offsets", self.group
            )
        )
        self._queues: dict[MessageQueue, tuple[ProcessQueue, anyio.CancelScope]] = {}
        self._rebalance_now = anyio.Event()
        self._rebalance_lock = anyio.Lock()
        self._flow = anyio.Event()
        self._tg: TaskGroup | None = None
        self._work_send: MemoryObjectSendStream[tuple[ProcessQueue, MessageExt]] | None = None
        self.consumed = 0
        self.failed = 0

    def assigned(self) -> list[MessageQueue]:
        """The queues this member consumes now."""
        return sorted(self._queues)

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        await self._join(
            stack,
            lambda: self._instance.register_consumer(self.group, self.mailbox, self._consumer_data),
            self._instance.unregister_consumer,
        )
        stack.push_async_callback(self.offsets.persist)  # after every worker has stopped
        send, receive = anyio.create_memory_object_stream[tuple[ProcessQueue, MessageExt]](
            self.concurrency * 2
        )
        self._work_send = send
        stack.callback(receive.close)
        stack.callback(send.close)
        self._tg = tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        for _ in range(self.concurrency):
            tg.start_soon(self._worker, receive.clone())
        tg.start_soon(self._serve_mailbox)
        for topic in self._subscriptions:
            try:
                await self._instance.routes.get(topic)
            except TopicNotFound:
                log.info("consumer.topic_not_found", topic=topic, group=self.group)
        await self._instance.heartbeat.beat()  # the brokers know the group before we pull
        await self._rebalance()
        tg.start_soon(self._rebalance_loop)
        tg.start_soon(self._persist_loop)
        log.info("consumer.started", group=self.group, model=self.model.value,
                 queues=len(self._queues))  # fmt: skip

    async def _closing(self) -> None:
        # Stop pulling; keep every offset in memory: the stack persists them once the workers
        # have stopped (releasing queues here would forget them before they are written).
        for pq, scope in self._queues.values():
            pq.dropped = True
            scope.cancel()

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.model.value,
            consume_from_where=self.consume_from.value,
            subscriptions=tuple(s.wire(self._sub_version) for s in self._subscriptions.values()),
        )

    # ---- rebalance ----------------------------------------------------------------------

    async def _rebalance_loop(self) -> None:
        while True:
            with anyio.move_on_after(self.rebalance_interval):
                await self._rebalance_now.wait()
            self._rebalance_now = anyio.Event()
            await self._rebalance()

    async def _consumer_ids(self, topic: str) -> list[str]:
        route = self._instance.routes.cached(topic) or await self._instance.routes.get(topic)
        header = GetConsumerListByGroupRequestHeader(consumer_group=self.group)
        for name in sorted(route.brokers):
            addr = route.master_addr(name)
            if addr is None:
                continue
            reply = await self._instance.request(
                addr,
                RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext()),
            )
            if reply.code == ResponseCode.SUCCESS:
                return list(decode_consumer_list(reply.body))
        return []

    async def _rebalance(self) -> None:
        async with self._rebalance_lock:
            wanted: set[MessageQueue] = set()
            for topic in self._subscriptions:
                try:
                    route = await self._instance.routes.get(topic)
                    if self.model is MessageModel.BROADCASTING:
                        mine = list(route.subscribe_queues)
                    else:
                        ids = await self._consumer_ids(topic)
                        mine = allocate(self.strategy, route.subscribe_queues, ids,
                                        self._instance.client_id)  # fmt: skip
                except RocketMQError as exc:  # try again at the next rebalance
                    log.info("consumer.rebalance_skipped", topic=topic, error=str(exc))
                    wanted |= {q for q in self._queues if q.topic == topic}
                    continue
                wanted |= set(mine)
            for queue in [q for q in self._queues if q not in wanted]:
                await self._release(queue)
            added = 0
            for queue in sorted(wanted - set(self._queues)):
                try:
                    start = await self._start_offset(queue)
                except RocketMQError as exc:
                    log.info("consumer.start_offset_failed", queue=str(queue), error=str(exc))
                    continue
                self._start(queue, start)
                added += 1
            if added:
                log.info("consumer.rebalanced", group=self.group, queues=len(self._queues))
            if self.on_rebalance is not None:
                self.on_rebalance(self.assigned())

    async def _start_offset(self, queue: MessageQueue) -> int:
        committed = await self.offsets.fetch(queue)
        if committed is not None and committed >= 0:
            return committed
        retry = queue.topic.startswith("%RETRY%")
        if self.consume_from is ConsumeFrom.FIRST_OFFSET or (
            retry and self.consume_from is ConsumeFrom.LAST_OFFSET
        ):
            return 0
        if self.consume_from is ConsumeFrom.TIMESTAMP and not retry:
            assert self.consume_timestamp_ms is not None
            return await offset_for_time(self._instance, queue, self.consume_timestamp_ms)
        return await max_offset(self._instance, queue)

    def _start(self, queue: MessageQueue, offset: int) -> None:
        assert self._tg is not None
        pq = ProcessQueue(queue, offset)
        scope = anyio.CancelScope()
        self._queues[queue] = (pq, scope)
        self._tg.start_soon(self._pull_loop, pq, scope)

    async def _release(self, queue: MessageQueue) -> None:
        pq, scope = self._queues.pop(queue)
        pq.dropped = True
        scope.cancel()
        await self.offsets.persist([queue])
        self.offsets.remove(queue)
        log.info("consumer.queue_released", queue=str(queue))

    # ---- pulling ------------------------------------------------------------------------

    def _over_limits(self, pq: ProcessQueue) -> bool:
        return (
            pq.count >= self.max_cached_messages
            or pq.cached_bytes >= self.max_cached_bytes
            or pq.span > self.max_span
        )

    async def _pull_loop(self, pq: ProcessQueue, scope: anyio.CancelScope) -> None:
        assert self._work_send is not None
        subscription = self._subscriptions[pq.queue.topic]
        with scope:
            while not pq.dropped:
                if self._over_limits(pq):  # flow control: wait for the workers to catch up
                    if self._flow.is_set():
                        self._flow = anyio.Event()
                    with anyio.move_on_after(1.0):
                        await self._flow.wait()
                    continue
                try:
                    result = await pull_once(
                        self._instance, self.group, pq.queue, pq.next_offset,
                        subscription=subscription, sub_version=self._sub_version,
                        max_messages=self.pull_batch_size, wait=self.pull_suspend,
                        request_timeout=self.request_timeout,
                    )  # fmt: skip
                except RocketMQError as exc:
                    log.info("consumer.pull_failed", queue=str(pq.queue), error=str(exc))
                    await anyio.sleep(1.0)  # Java's pullTimeDelayMillsWhenException
                    continue
                pq.last_pull = time.monotonic()
                if result.status is PullStatus.OFFSET_ILLEGAL:
                    log.warning("consumer.offset_illegal", queue=str(pq.queue),
                                offset=pq.next_offset, next=result.next_offset)  # fmt: skip
                    self.offsets.update(pq.queue, result.next_offset, increase_only=False)
                    await self.offsets.persist([pq.queue])
                pq.next_offset = result.next_offset
                if result.status is not PullStatus.FOUND:
                    if pq.count == 0:  # nothing in flight: the queue is consumed up to here
                        self.offsets.update(pq.queue, result.next_offset)
                    continue
                for message in pq.put(list(result.messages)):
                    await self._work_send.send((pq, message))

    # ---- consuming ----------------------------------------------------------------------

    async def _worker(
        self, work: MemoryObjectReceiveStream[tuple[ProcessQueue, MessageExt]]
    ) -> None:
        async with work:
            async for pq, message in work:
                if pq.dropped:
                    continue
                await self._consume(pq, message)

    def _present(self, message: MessageExt) -> MessageExt:
        """Retried messages come from ``%RETRY%<group>``: show them under their topic."""
        original = message.properties.get(Property.RETRY_TOPIC)
        if original and message.topic.startswith("%RETRY%"):
            message.topic = original
        return message

    async def _consume(self, pq: ProcessQueue, message: MessageExt) -> None:
        try:
            await self.handler(self._present(message))
            done = True
            self.consumed += 1
        except Exception as exc:
            self.failed += 1
            log.info("consumer.handler_failed", msg_id=message.msg_id, error=repr(exc),
                     reconsume_times=message.reconsume_times)  # fmt: skip
            done = self.model is MessageModel.BROADCASTING or await self._send_back(message)
        if not done:  # keep it (it holds the offset back) and consume it again here, later
            assert self._tg is not None
            self._tg.start_soon(self._retry_locally, pq, message)
            return
        offset = pq.remove(message)
        if not pq.dropped:
            self.offsets.update(pq.queue, offset)
        self._flow.set()

    async def _retry_locally(self, pq: ProcessQueue, message: MessageExt) -> None:
        await anyio.sleep(self.local_retry_delay)
        if not pq.dropped and self._work_send is not None:
            await self._work_send.send((pq, message))

    async def _send_back(self, message: MessageExt) -> bool:
        """CONSUMER_SEND_MSG_BACK: the broker redelivers later (or dead-letters)."""
        queue = MessageQueue(message.topic, message.broker_name, message.queue_id)
        try:
            addr = await self._instance.routes.broker_addr(queue, master_only=True)
            header = ConsumerSendMsgBackRequestHeader(
                offset=message.commit_log_offset,
                group=self.group,
                delay_level=self.retry_delay_level,
                origin_msg_id=message.msg_id,
                origin_topic=message.topic,
                max_reconsume_times=self.max_reconsume_times,
                broker_name=message.broker_name,
            )
            reply = await self._instance.request(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
            )
        except RocketMQError as exc:
            log.warning("consumer.send_back_failed", msg_id=message.msg_id, error=str(exc))
            return False
        if reply.code != ResponseCode.SUCCESS:
            log.warning("consumer.send_back_refused", msg_id=message.msg_id, code=reply.code,
                        remark=reply.remark)  # fmt: skip
            return False
        return True

    async def _persist_loop(self) -> None:
        while True:
            await anyio.sleep(self.persist_interval)
            await self.offsets.persist(list(self._queues))

    # ---- broker requests ----------------------------------------------------------------

    async def _serve_mailbox(self) -> None:
        async for inbound in self.mailbox:
            code = inbound.command.code
            if code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
                log.info("consumer.ids_changed", group=self.group)
                self._rebalance_now.set()
            else:
                inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"request {code} not supported yet")
