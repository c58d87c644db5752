"""The ``popper`` actors: long-polling POPs of one topic on one broker (every queue of it, or
one queue), under flow control, handing what they pop to a :class:`~.service.PopConsumeService`.

Shared by :class:`~.group.PopGroup` (one popper per (topic, broker)) and a push consumer that
follows the broker's request mode (:mod:`..push.poplane`, one per queue the broker assigns it
in POP mode). Network and broker errors are retried after a back-off, never a crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import attrs
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.brokercalls import BROKER_FLOW_CONTROL_DELAY
from rocketmq_actors.consumer.core.message import deserialize
from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.acks import Acker
from rocketmq_actors.consumer.pop.service import PopConsumeService
from rocketmq_actors.errors import BrokerError, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.pop import INIT_MODE_MAX, INIT_MODE_MIN
from rocketmq_actors.runtime.backoff import Backoff

__all__ = ["PopSettings", "Popper", "PopperOwner", "init_mode"]

log = get_logger("rocketmq_actors.consumer")


@attrs.frozen(kw_only=True)
class PopSettings:
    """What every POP request of a consumer asks for."""

    batch_size: int  # messages per POP, at most
    max_cached: int  # popped and not settled, at most
    invisible_time: float
    poll_time: float
    orderly: bool
    request_timeout: float
    init_mode: int
    max_body: int


def init_mode(consume_from: ConsumeFrom) -> int:
    """Where a queue the group never popped starts: its first message or its last."""
    return INIT_MODE_MIN if consume_from is ConsumeFrom.FIRST_OFFSET else INIT_MODE_MAX


class PopperOwner(Protocol):
    group: str

    @property
    def instance(self) -> ClientInstance: ...
    @property
    def stopping(self) -> bool: ...
    async def wait_flow(self) -> None: ...
    def subscription(self, topic: str) -> Subscription: ...


class Popper:
    """The popper actors of one consumer, and what they counted."""

    def __init__(
        self,
        owner: PopperOwner,
        settings: PopSettings,
        service: PopConsumeService,
        acker: Acker,
        value_deserializer: Callable[[bytes], Any] | None,
    ) -> None:
        self.owner, self.settings = owner, settings
        self.service, self.acker = service, acker
        self.value_deserializer = value_deserializer
        self.pops = 0  # POP requests answered
        self.errors = 0  # POP requests that failed (retried after a back-off)

    async def run(
        self,
        topic: str,
        broker: str,
        queue_id: int = -1,
        *,
        task_status: TaskStatus[None],
    ) -> None:
        """One popper actor: ``topic`` on ``broker`` (``queue_id`` -1: every queue of it), with
        the owner's subscription of the topic as it is at each POP (it may change)."""
        task_status.started()
        backoff = Backoff(initial=0.2, maximum=5.0)
        settings, owner, service = self.settings, self.owner, self.service
        while not owner.stopping:
            while service.cached >= settings.max_cached:
                await owner.wait_flow()
            room = settings.max_cached - service.cached
            asked = time.monotonic()
            subscription = owner.subscription(topic)
            try:
                popped = await pop_calls.pop_once(
                    owner.instance, owner.group, topic, broker, subscription=subscription,
                    max_messages=min(settings.batch_size, room),
                    invisible_time=settings.invisible_time, poll_time=settings.poll_time,
                    order=settings.orderly, request_timeout=settings.request_timeout,
                    init_mode=settings.init_mode, max_body=settings.max_body, queue_id=queue_id,
                )  # fmt: skip
            except RocketMQError as exc:
                self.errors += 1
                if isinstance(exc, BrokerError) and exc.code == ResponseCode.FLOW_CONTROL:
                    await anyio.sleep(BROKER_FLOW_CONTROL_DELAY)
                    continue
                log.info("consumer.pop.failed", topic=topic, broker=broker, error=str(exc))
                await backoff.sleep()
                continue
            self.pops += 1
            for handle in popped.unwanted:  # Java acks what its tag filter drops
                self.acker.add(topic, handle)
            if popped.status is pop_calls.PopStatus.POLLING_FULL or (
                popped.status is pop_calls.PopStatus.NOT_FOUND
                and time.monotonic() - asked < settings.poll_time / 2
            ):
                # nothing, long before the poll time: the broker did not hold the request
                # (PopMessageRequestHeader.isTimeoutTooMuch: our clock behind the broker's
                # by more than the poll time) - never a tight loop of POPs
                if popped.status is pop_calls.PopStatus.NOT_FOUND and not backoff.attempt:
                    log.info("consumer.pop.answered_early", topic=topic, broker=broker,
                             seconds=round(time.monotonic() - asked, 3))  # fmt: skip
                await backoff.sleep()
                continue
            backoff.reset()
            if popped.messages:
                if self.value_deserializer is not None:
                    messages = [m for m, _ in popped.messages]
                    deserialize(messages, self.value_deserializer, owner.group)
                await service.accept(topic, list(popped.messages))
