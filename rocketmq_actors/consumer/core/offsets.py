"""Consumer offsets: where each queue resumes.

* :class:`RemoteOffsetStore` (clustering): the broker keeps the group's offsets.
  QUERY_CONSUMER_OFFSET reads one (QUERY_NOT_FOUND means the group never committed);
  UPDATE_CONSUMER_OFFSET (one-way, as the Java client sends it) writes one, to the master.
  The broker accepts it only for a group it knows - one a consumer heartbeat has registered
  (measured: an unknown group is answered SUBSCRIPTION_GROUP_NOT_EXIST, which a one-way
  request never shows).
* :class:`LocalOffsetStore` (broadcasting): every consumer keeps its own offsets in a JSON
  file, replaced atomically on each persist so a crash never leaves half a file.

Both keep the offsets in memory; ``update`` only moves an offset forward unless told otherwise
(a slow acknowledgement must not move a queue back), and ``persist`` writes them out - every few
seconds, when a queue is released, and on shutdown.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)

__all__ = ["LocalOffsetStore", "OffsetFileError", "OffsetStore", "RemoteOffsetStore"]

log = get_logger("rocketmq_actors.consumer")


class OffsetFileError(RocketMQError):
    """The local offset file exists but cannot be read; starting over could skip or repeat
    messages, so the consumer refuses to guess."""


class OffsetStore:
    """In-memory offsets plus a backing store (see the subclasses)."""

    def __init__(self) -> None:
        self._offsets: dict[MessageQueue, int] = {}

    def read(self, queue: MessageQueue) -> int | None:
        return self._offsets.get(queue)

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        current = self._offsets.get(queue)
        if current is None or not increase_only or offset > current:
            self._offsets[queue] = offset

    def remove(self, queue: MessageQueue) -> None:
        self._offsets.pop(queue, None)

    async def fetch(self, queue: MessageQueue) -> int | None:
        """The committed offset of ``queue`` from the backing store (None: none yet)."""
        raise NotImplementedError

    async def fetch_start(self, queue: MessageQueue) -> int | None:
        """Where a member that takes ``queue`` over starts, if the store says (None: as the
        consumer's ``consume_from`` / ``auto_offset_reset`` says)."""
        return await self.fetch(queue)

    async def persist_on_close(self) -> None:
        """Everything, confirmed: the next member of the group may read it at once (a one-way
        update can still be queued on the broker when the next query arrives)."""
        await self.persist(confirmed=True)

    async def persist(
        self, queues: Iterable[MessageQueue] | None = None, *, confirmed: bool = False
    ) -> None:
        """Write the in-memory offsets of ``queues`` (all when None) to the backing store;
        ``confirmed``: return only once the store has them (before handing a queue over)."""
        raise NotImplementedError


#: an unchanged offset goes to the broker again on every this many periodic persists
RESEND_EVERY = 12
#: confirmed offset commits in flight at once (a stop or a release of many queues)
CONFIRMED_IN_FLIGHT = 64


class RemoteOffsetStore(OffsetStore):
    """A periodic (one-way) persist sends only the offsets that moved since they were last
    sent, and all of them every :data:`RESEND_EVERY` persists: the Java client sends every
    queue's offset every time, so an idle consumer of thousands of queues wrote thousands of
    requests every ``persist_interval`` (benchmarks/scale.py counts them). The resend
    repairs a broker that lost offsets it had not flushed yet (a broker killed, a slave
    promoted); a confirmed persist (a queue handed over, a stop) sends every offset asked."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self._instance = instance
        self.group = group
        self._sent: dict[MessageQueue, int] = {}  # the offset last sent, by queue
        self._periodic = 0

    def remove(self, queue: MessageQueue) -> None:
        super().remove(queue)
        self._sent.pop(queue, None)

    async def fetch(self, queue: MessageQueue) -> int | None:
        return await self._query(queue, zero_if_young=False)

    async def fetch_start(self, queue: MessageQueue) -> int | None:
        """As the Java client asks (RemoteBrokerOffsetStore leaves setZeroIfNotFound unset):
        for a group with no committed offset on a queue whose first message is still in the
        broker's memory (a young queue), a 5.x broker answers 0, and the group starts there
        whatever ``consume_from`` says; a 4.x broker always does so."""
        return await self._query(queue, zero_if_young=None)

    async def _query(self, queue: MessageQueue, *, zero_if_young: bool | None) -> int | None:
        # the master, else a slave (Java's findBrokerAddressInSubscribe): with the master
        # gone, a queue can still start where the group left it
        addr = await self._instance.routes.broker_addr(queue, master_only=False)
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=self.group,
            topic=queue.topic,
            queue_id=queue.queue_id,
            set_zero_if_not_found=zero_if_young,
            broker_name=queue.broker_name,
        )
        reply = await self._instance.request(
            addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext())
        )
        if reply.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(addr, reply.code, reply.remark)
        return OffsetResponseHeader.from_ext(reply.ext_fields).offset

    async def persist(
        self, queues: Iterable[MessageQueue] | None = None, *, confirmed: bool = False
    ) -> None:
        targets = list(self._offsets) if queues is None else list(queues)
        if not confirmed:
            self._periodic += 1
        every = confirmed or self._periodic % RESEND_EVERY == 0
        due = [
            (queue, offset)
            for queue in targets
            if (offset := self._offsets.get(queue)) is not None
            and (every or self._sent.get(queue) != offset)
        ]
        if not confirmed:  # one-way: nothing to wait for
            for queue, offset in due:
                await self._send(queue, offset, confirmed=False)
            return
        # confirmed (a release, a stop): the round trips side by side, not one after another
        # (a consumer of many queues stops in the time of a few: benchmarks/scale.py, stop_s).
        # A broker keeps a group's offsets of a topic in a table it makes at the first commit,
        # unguarded: two first commits at once may each make one, and one queue's offset is
        # lost (seen on 4.9.7 and 5.3.3). So each (broker, topic)'s first commit goes alone,
        # side by side with the other topics' firsts, before the rest.
        firsts: dict[tuple[str, str], tuple[MessageQueue, int]] = {}
        rest: list[tuple[MessageQueue, int]] = []
        for queue, offset in due:
            key = (queue.broker_name, queue.topic)
            if key in firsts:
                rest.append((queue, offset))
            else:
                firsts[key] = (queue, offset)
        limiter = anyio.CapacityLimiter(CONFIRMED_IN_FLIGHT)

        async def send(queue: MessageQueue, offset: int) -> None:
            async with limiter:
                await self._send(queue, offset, confirmed=True)

        for batch in (list(firsts.values()), rest):
            async with anyio.create_task_group() as tg:
                for queue, offset in batch:
                    tg.start_soon(send, queue, offset)

    async def _send(self, queue: MessageQueue, offset: int, *, confirmed: bool) -> None:
        """UPDATE_CONSUMER_OFFSET of one queue (a failure is logged: the offset stays in
        memory, and the next persist sends it again)."""
        try:
            addr = await self._instance.routes.broker_addr(queue, master_only=False)
            header = UpdateConsumerOffsetRequestHeader(
                consumer_group=self.group,
                topic=queue.topic,
                queue_id=queue.queue_id,
                commit_offset=offset,
                broker_name=queue.broker_name,
            )
            cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext())
            if not confirmed:
                await self._instance.oneway(addr, cmd)
            else:
                reply = await self._instance.request(addr, cmd)
                if reply.code != ResponseCode.SUCCESS:
                    raise broker_error(addr, reply.code, reply.remark)
            self._sent[queue] = offset
        except RocketMQError as exc:
            log.warning("offsets.persist_failed", queue=str(queue), error=str(exc))


class LocalOffsetStore(OffsetStore):
    """Offsets of one broadcasting consumer group in
    ``<directory>/<client id>/<group>/offsets.json``, as Java's ``LocalFileOffsetStore``: two
    members of the group on one host keep their own (the client id stays the same across
    restarts when the client has an ``instance_name``)."""

    def __init__(self, directory: Path | str, client_id: str, group: str) -> None:
        super().__init__()
        self.path = Path(directory) / client_id / group / "offsets.json"
        self._stored = self._load()

    def _load(self) -> dict[MessageQueue, int]:
        try:
            raw = json.loads(self.path.read_text())
            return {
                MessageQueue(row["topic"], row["brokerName"], int(row["queueId"])): int(
                    row["offset"]
                )
                for row in raw["offsets"]
            }
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OffsetFileError(f"cannot read consumer offsets from {self.path}: {exc}") from exc

    async def fetch(self, queue: MessageQueue) -> int | None:
        return self._stored.get(queue)

    async def persist(
        self, queues: Iterable[MessageQueue] | None = None, *, confirmed: bool = False
    ) -> None:
        targets = list(self._offsets) if queues is None else list(queues)
        for queue in targets:
            if queue in self._offsets:
                self._stored[queue] = self._offsets[queue]
        rows = [
            {"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id, "offset": o}
            for q, o in sorted(self._stored.items())
        ]
        await anyio.to_thread.run_sync(self._write, {"offsets": rows})

    def _write(self, document: dict[str, list[dict[str, object]]]) -> None:
        """Blocking (fsync): runs in a worker thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".offsets-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(document, fh, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)  # atomic: readers see the old or the new file
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
