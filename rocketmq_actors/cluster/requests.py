"""A group member's answers to the broker: the mailbox actor serving the requests of its group
(every producer and consumer runs one).

The router delivers typed events (decoded in the protocol layer) to the member's mailbox; this
actor dispatches each to the handler its member registered for the event's type. Handlers that
may take long (a transaction check, a reset of offsets, consuming one message directly) run as
tasks of the actor, at most ``concurrency`` at once, so that a slow one never holds up the next
request; ``inline`` handlers (a reply to a request: never behind a slow check) run at once, in
the actor. A request no handler serves is answered REQUEST_CODE_NOT_SUPPORTED, one a handler
fails on SYSTEM_ERROR with the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.events import BrokerRequest
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.tree import Node

__all__ = ["Handler", "Inline", "RequestServer"]

log = get_logger("rocketmq_actors.cluster")

Handler = Callable[[Inbound], Awaitable[None] | None]
Inline = Callable[[Inbound], None]


class RequestServer:
    def __init__(
        self,
        group: str,
        mailbox: Mailbox[Inbound],
        handlers: Mapping[type[BrokerRequest], Handler],
        *,
        concurrency: int = 8,
        inline: Mapping[type[BrokerRequest], Inline] | None = None,
    ) -> None:
        self.group = group
        self.mailbox = mailbox
        self.handlers = dict(handlers)
        self.inline = dict(inline or {})
        self.served = 0
        self._slots = anyio.Semaphore(concurrency)

    async def run(self, *, task_status: TaskStatus[RequestServer]) -> None:
        async with anyio.create_task_group() as tg:
            task_status.started(self)
            async for inbound in self.mailbox:
                now = self.inline.get(type(inbound.event))
                if now is not None:
                    now(inbound)
                    self.served += 1
                    continue
                handler = self.handlers.get(type(inbound.event))
                if handler is None:
                    inbound.reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                  remark=f"code {inbound.command.code}")  # fmt: skip
                    continue
                await self._slots.acquire()
                tg.start_soon(self._serve, handler, inbound)

    async def _serve(self, handler: Handler, inbound: Inbound) -> None:
        try:
            result = handler(inbound)
            if result is not None:
                await result
            self.served += 1
        except (RocketMQError, ValueError) as exc:
            log.warning("member.bad_broker_request", group=self.group,
                        code=inbound.command.code, error=str(exc))  # fmt: skip
            inbound.reply(ResponseCode.SYSTEM_ERROR, remark=f"cannot serve: {exc}")
        finally:
            self._slots.release()

    def describe(self) -> Node:
        return Node(name="mailbox", kind="mailbox", mailbox=self.mailbox.statistics().queued,
                    info={"served": self.served})  # fmt: skip
