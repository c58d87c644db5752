"""A pull consumer's queue-change listeners (Java's lite pull
``registerTopicMessageQueueChangeListener``): a listener registered for a topic is called with
the topic and its readable queues whenever they differ from what they were at the last look.
The watch actor looks every ``topic_metadata_check_interval`` (Java's
``topicMetadataCheckIntervalMillis``); the queues at registration are the first known, as in
Java (no call then). A listener may be a plain function or a coroutine function; one that
raises is logged and called again at the next change."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.consumer.core.namespaced import Namespace
from rocketmq_actors.errors import ConfigError, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_topic, wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.tree import Node

__all__ = ["QueueChangeListener", "QueueWatch"]

log = get_logger("rocketmq_actors.consumer")

#: ``listener(topic, queues)``, the topic and queues as the application names them
QueueChangeListener = Callable[[str, set[MessageQueue]], object]


class QueueWatch:
    def __init__(
        self, refresh: Callable[[str], Awaitable[TopicRoute]], ns: Namespace, *, interval: float
    ) -> None:
        self._refresh = refresh  # a route looked up again, now
        self._ns = ns
        self.interval = interval
        # wire topic -> (the application's name of it, its listener, its queues at the last look)
        self._watched: dict[str, tuple[str, QueueChangeListener, frozenset[MessageQueue]]] = {}

    async def watch(self, topic: str, listener: QueueChangeListener) -> set[MessageQueue]:
        """Call ``listener`` when the queues of ``topic`` (the application's name) change; its
        queues now. Another listener for the topic replaces it."""
        validate_topic(topic, error=ConfigError)
        if not callable(listener):
            raise ConfigError(f"listener must be callable, not {type(listener).__name__}")
        wire = wrap(self._ns.name, topic)
        queues = await self._queues(wire)
        self._watched[wire] = (topic, listener, queues)
        return self._ns.app_set(queues)

    async def _queues(self, topic: str) -> frozenset[MessageQueue]:
        return frozenset((await self._refresh(topic)).subscribe_queues)

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """The actor: a look every ``interval``."""
        task_status.started()
        while True:
            await anyio.sleep(self.interval)
            await self.check()

    async def check(self) -> None:
        """Look at every watched topic once; call the listeners of those that changed."""
        for wire, (topic, listener, known) in list(self._watched.items()):
            try:
                queues = await self._queues(wire)
            except RocketMQError as exc:  # (the NameServer, say): looked at again next time
                log.info("consumer.queue_watch_failed", topic=wire, error=str(exc))
                continue
            if queues == known or self._watched.get(wire, ("", None))[1] is not listener:
                continue  # (unchanged, or another listener registered meanwhile)
            self._watched[wire] = (topic, listener, queues)
            log.info("consumer.queues_changed", topic=wire, queues=len(queues))
            try:
                called = listener(topic, self._ns.app_set(queues))
                if inspect.isawaitable(called):
                    await called
            except Exception as exc:  # the application's: logged, never the actor's end
                log.error("consumer.queue_listener_failed", topic=topic, error=repr(exc),
                          exc_info=exc)  # fmt: skip

    def describe(self) -> Node:
        return Node(name="queue-watch", kind="queue-watch", info={"topics": len(self._watched)})
