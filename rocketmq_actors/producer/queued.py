"""What the senders hold of a message they admitted: its future, how it is routed, and (a
plain message's) its first attempt itself - one object a message in flight. A message that
joined an auto-batch has none: its batch holds its future (:mod:`.autobatch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.soon import Call
from rocketmq_actors.runtime.waiters import Waiter

from .attempt import FirstAttempt
from .prepare import Prepared
from .result import SendResult
from .sendloop import Routing

if TYPE_CHECKING:
    from .senders import Senders

__all__ = ["Queued"]


class Queued(FirstAttempt):
    """An admitted message: its future, how it is routed, and (a plain message's) its first
    attempt itself - one object a message in flight."""

    __slots__ = (
        "callback", "first", "future", "lane", "previous", "routing", "senders", "seq", "size",
        "timeout",
    )  # fmt: skip

    def __init__(  # noqa: PLR0917 - positional: built once per message
        self,
        senders: Senders,
        future: Waiter,
        prepared: Prepared,
        routing: Routing,
        timeout: float | None,
        lane: MessageQueue | None,
        previous: Waiter | None,
        seq: int,
        callback: Call | None = None,
    ) -> None:
        # (FirstAttempt's fields: it has no __init__ to call, a call less a message)
        loop = senders.loop
        self.loop = loop
        self.encoder = loop.encoder
        self.prepared = prepared
        self.size = prepared.size  # (what its admission counted)
        self.batch = False
        self.opaque = 0
        self.outcome = None
        self.senders = senders
        self.future = future
        self.routing = routing
        self.timeout = timeout
        self.lane = lane
        self.previous = previous  # ordered: the send before it to the same queue
        self.seq = seq  # admission order: flush waits for what was admitted before it
        self.first = False  # its first attempt started without a task, not SEND_OK: go on
        self.callback = callback  # submit's / send_nowait's: called with the future once

    @property
    def user_topic(self) -> str:
        return self.prepared.user_topic

    def first_done(self, outcome: SendResult | Exception | None) -> None:
        self.senders._first_done(self, outcome)
