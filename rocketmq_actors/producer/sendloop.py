"""The send loop: how one message (or one batch chunk) reaches a broker, within one deadline.

Up to ``1 + retry_times`` attempts, each on another broker than the last failure (an ordered
send: one attempt, its queue fixed by the key), all within the send's timeout - the route
lookup (silent NameServers), the connection (a broker being reconnected is not waited for: the
send fails over at once) and the broker's answer included. Every failure is a
:class:`~rocketmq_actors.errors.SendFailed` that lists every attempt and says whether the
message was definitely not stored or the outcome is unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.routes import TEMPLATE_TOPIC, TopicRoute
from rocketmq_actors.cluster.versions import is_5x, version_name
from rocketmq_actors.errors import (
    AccessDenied,
    BrokerError,
    ConnectError,
    ConnectionLost,
    NameServerUnavailable,
    RequestTimeout,
    RocketMQError,
    SendFailed,
    UnsupportedByBroker,
    broker_error,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS, SeriesCache
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.messages import Message
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.checks import check_timeout
from rocketmq_actors.runtime.connection import BrokerConnection

from .attempt import AttemptFrame, FirstAttempt
from .prepare import Prepared
from .result import SendResult, SendStatus, new_send_result, status_of_code
from .selector import LatencyFaultTolerance, QueueSelector, RoundRobin, select_by_key

__all__ = ["ROUND_ROBIN", "TEMPLATE_TOPIC", "Routing", "SendLoop"]

log = get_logger("rocketmq_actors.producer")

# answers meaning "this topic does not look like your (guessed) route says"
_STALE_GUESS = frozenset({ResponseCode.INVALID_PARAMETER, ResponseCode.TOPIC_NOT_EXIST})
# errors after which the route may name a master that is gone: the connection failed or went
# silent (killed, partitioned), or the broker refused the write (a slave answers
# SERVICE_NOT_AVAILABLE, a broker whose write permission was taken NO_PERMISSION)
_ROUTE_SUSPECT = (ConnectError, ConnectionLost, RequestTimeout)
_NOT_MASTER = frozenset({ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.NO_PERMISSION})

# the send path's enum members, looked up once: on Python 3.11 an attribute of
# an Enum class costs several times a module global's (benchmarks/abtest.py measured the
# change: the "changes" entry of benchmarks/results/nullbroker.json)
_SEND_OK = SendStatus.SEND_OK
_SEND_V2 = RequestCode.SEND_MESSAGE_V2
_SEND_BATCH = RequestCode.SEND_BATCH_MESSAGE


@attrs.frozen
class Routing:
    """How to pick the queue: round robin (no key, no selector), by key, or by selector."""

    message: Message | None = None
    sharding_key: str | None = None
    selector: QueueSelector | None = None
    arg: object = None

    @property
    def ordered(self) -> bool:
        return self.sharding_key is not None or self.selector is not None


ROUND_ROBIN = Routing()


class SendLoop:
    def __init__(
        self,
        instance: ClientInstance,
        encoder: SendFrameEncoder,
        *,
        send_timeout: float,
        retry_times: int,
        faults: LatencyFaultTolerance,
        retry_not_stored_ok: bool = False,
        attempt_timeout: float | None = None,
    ) -> None:
        self._instance = instance
        self.encoder = encoder
        self.send_timeout = send_timeout
        # Kafka's request.timeout.ms beside delivery.timeout.ms: an attempt that outlives it
        # (a silent broker) is given up, outcome unknown, and the send goes on elsewhere -
        # a possible duplicate; None: an attempt may take what is left of send_timeout (Java)
        self.attempt_timeout = attempt_timeout
        self.retry_times = retry_times
        self.retry_not_stored_ok = retry_not_stored_ok
        self.faults = faults
        self._round_robin = RoundRobin(faults)
        self.in_flight = 0  # sends under way (a stop waits for them)
        self.on_done: Callable[[], None] | None = None  # told when one ends (while stopping)
        self._ok_series = SeriesCache(  # topic -> (sends ok, send seconds)
            lambda topic: (
                METRICS.key("rocketmq_client_send_total", topic=topic, result="ok"),
                METRICS.key("rocketmq_client_send_seconds", topic=topic),
            )
        )

    async def route(self, topic: str) -> TopicRoute:
        return await self._instance.routes.get(topic, template=TEMPLATE_TOPIC)

    async def route_within(self, topic: str, timeout: float) -> TopicRoute:
        """A route lookup bounded by what is left of a send's deadline (silent NameServers
        would otherwise take their request timeout each)."""
        with anyio.move_on_after(timeout):
            return await self.route(topic)
        # nothing reached a broker: the send's outcome is known (not stored)
        raise NameServerUnavailable(
            f"no NameServer gave the route of {topic!r} within {timeout:.3f}s"
        )

    async def connect_within(
        self, addr: str, timeout: float, *, fail_over: bool = False
    ) -> BrokerConnection:
        """The connection to ``addr`` within what is left of a send's deadline. With
        ``fail_over`` (another broker could take the send) a broker being reconnected is not
        waited for: :class:`ConnectError` at once."""
        with anyio.move_on_after(timeout):
            return await self._instance.pool.get(addr, wait=not fail_over)
        raise ConnectError(addr, f"no connection within {timeout:.3f}s")

    @staticmethod
    def _elsewhere(route: TopicRoute, broker: str, routing: Routing) -> bool:
        """Could another broker take this send (round robin, and the route has another)?"""
        return not routing.ordered and any(q.broker_name != broker for q in route.publish_queues)

    @staticmethod
    def _given_up(
        topic: str, attempts: list[RocketMQError], exc: SendFailed | UnsupportedByBroker
    ) -> RocketMQError:
        """The error of a send that ``exc`` ends. After earlier attempts it is a
        :class:`SendFailed` listing them too: one of them (a timeout, a connection lost
        mid-request) may have stored the message, and its ``outcome_unknown`` must say so (a
        killed master's last writes reach its promoted standby)."""
        METRICS.inc("rocketmq_client_send_total", topic=topic, result="failed")
        if not attempts:
            return exc
        return SendFailed(
            topic, [*attempts, *(exc.attempts if isinstance(exc, SendFailed) else [exc])]
        )

    async def lane_of(self, topic: str, routing: Routing) -> MessageQueue | None:
        """The queue an ordered message goes to (None: the send itself reports why not)."""
        try:
            route = self._instance.routes.cached(topic) or await self.route(topic)
        except RocketMQError:
            return None
        return self.lane_in(route, routing)

    def lane_in(self, route: TopicRoute, routing: Routing) -> MessageQueue | None:
        """The queue of ``route`` an ordered message goes to (None: as :meth:`lane_of`)."""
        try:
            return self.choose(route, routing, None)
        except RocketMQError:
            return None

    def choose(self, route: TopicRoute, routing: Routing, avoid: str | None) -> MessageQueue:
        queues = route.publish_queues
        if not queues:
            raise SendFailed(route.topic, [BrokerError("-", 17, "no writable queue in route")])
        if routing is ROUND_ROBIN:
            return self._round_robin.choose(queues, avoid)
        if routing.message is not None and routing.sharding_key is not None:
            return select_by_key(queues, routing.message, routing.sharding_key)
        if routing.message is not None and routing.selector is not None:
            return routing.selector(queues, routing.message, routing.arg)
        return self._round_robin.choose(queues, avoid)

    def master(self, route: TopicRoute, queue: MessageQueue) -> str:
        addr = route.master_addr(queue.broker_name)
        if addr is None:
            # the master died and its standby is not promoted yet (or the route is older
            # than the promotion): look again soon, not at the next interval
            self._instance.routes.mark_stale(route.topic)
            raise SendFailed(
                route.topic, [BrokerError(queue.broker_name, 14, "the broker has no master")]
            )
        return addr

    async def timer_queue(
        self, route: TopicRoute, routing: Routing, queue: MessageQueue, timeout: float
    ) -> MessageQueue:
        """The queue a timer message goes to: ``queue`` if its master runs 5.x, else (a round
        robin send in a mixed cluster) a queue of another master that does. Refused with
        :class:`UnsupportedByBroker` when the send is ordered (its key fixes the queue) or no
        writable master of the route runs 5.x. The versions are the brokers' heartbeat
        answers, learnt once each (:meth:`HeartbeatService.version_of`)."""
        deadline = time.monotonic() + timeout
        try:
            await self.check_timer(self.master(route, queue), timeout)
            return queue
        except UnsupportedByBroker:
            if routing.ordered:
                raise
            able = await self._timer_brokers(route, queue.broker_name, deadline)
            if not able:
                raise
        return self._round_robin.choose([q for q in route.publish_queues if q.broker_name in able])

    async def _timer_brokers(self, route: TopicRoute, refused: str, deadline: float) -> set[str]:
        """The route's writable brokers, but ``refused``, whose master runs 5.x (a broker whose
        version cannot be learnt within the deadline is left out)."""
        able: set[str] = set()
        for broker in sorted({q.broker_name for q in route.publish_queues} - {refused}):
            addr = route.master_addr(broker)
            remaining = deadline - time.monotonic()
            if addr is None or remaining <= 0:
                continue
            try:
                version = await self._instance.heartbeat.version_of(addr, remaining)
            except RocketMQError as exc:
                log.info("producer.timer.version_unknown", addr=addr, error=str(exc))
                continue
            if is_5x(version):
                able.add(broker)
        return able

    async def check_timer(self, addr: str, timeout: float) -> None:
        """A 4.x broker ignores the TIMER_* properties (no TimerMessageStore before 5.0) and
        would deliver a timer message at once: refuse it before it is written. The version is
        the broker's heartbeat answer's (one heartbeat to it first if none was heard yet)."""
        version = await self._instance.heartbeat.version_of(addr, timeout)
        if not is_5x(version):
            raise UnsupportedByBroker(
                "timer delivery (deliver_at_ms / delay_ms)", addr, version_name(version)
            )

    def start_first(self, attempt: FirstAttempt, timeout: float | None) -> bool:
        """Start the first attempt of a send without a key or selector (the caller checks)
        now, with no task: True if it was started (a cached route, an open connection with
        room, no timer). ``attempt.first_done(...)`` is then called once, from the
        connection as the answer (or its failure) arrives, with the :class:`SendResult` of a
        SEND_OK answer, with None when :meth:`send` is to go on from the attempt, or with the
        exception of a bug. False, with nothing sent: the caller sends with :meth:`send`.
        ``timeout`` is checked already."""
        prepared = attempt.prepared
        route = self._instance.routes.cached(prepared.topic)
        if (
            route is None or prepared.timer or prepared.batch_ids
            or not (queues := route.publish_queues)
        ):  # fmt: skip
            return False
        queue = self._round_robin.choose(queues, None)
        addr = route.master_addr(queue.broker_name)
        if addr is None or (conn := self._instance.pool.registry.lookup(addr)) is None:
            return False
        if not conn.is_open:
            return False
        started = time.monotonic()
        deadline = started + (timeout or self.send_timeout)
        attempt_end = deadline
        if self.attempt_timeout is not None:
            attempt_end = min(deadline, started + self.attempt_timeout)
        attempt.route, attempt.queue, attempt.addr, attempt.conn = route, queue, addr, conn
        attempt.started, attempt.deadline = started, deadline
        try:
            if conn.start_encoded(_SEND_V2, attempt.encode, attempt_end - started,
                                  prepared.size, attempt) is None:  # fmt: skip
                return False
        except Exception:  # (the frame could not be built: the send loop reports it)
            return False
        self.in_flight += 1
        return True

    def attempt_failed(self, topic: str, broker: str, exc: RocketMQError) -> None:
        """An attempt on ``broker`` failed without an answer: the broker is avoided a while
        (latency fault tolerance), and the route looked up again if it may name a master
        that is gone."""
        self.faults.record(broker, 0, failed=True)
        if isinstance(exc, _ROUTE_SUSPECT):
            self._instance.routes.mark_stale(topic)

    def result_of(
        self,
        prepared: Prepared,
        queue: MessageQueue,
        addr: str,
        reply: RemotingCommand,
        started: float,
        *,
        status: SendStatus = _SEND_OK,
    ) -> SendResult:
        """The result of a stored send's answer, its latency recorded."""
        broker = queue.broker_name
        if self.faults.enabled:
            self.faults.record(broker, (time.monotonic() - started) * 1000)
        ext = reply.ext_fields
        try:  # the hot path: read the fields directly (SendMessageResponseHeader)
            queue_id = int(ext["queueId"])
            if queue.queue_id != queue_id or queue.topic != prepared.user_topic:
                queue = MessageQueue(prepared.user_topic, broker, queue_id)
            result = new_send_result(
                status, prepared.msg_id, ext["msgId"], queue, int(ext["queueOffset"]),
                ext.get("transactionId"), ext.get("MSG_REGION"),
                ext.get("recallHandle"), ext.get("TRACE_ON") != "false",
            )  # fmt: skip
        except (KeyError, ValueError) as exc:
            METRICS.inc("rocketmq_client_send_total", topic=prepared.user_topic, result="failed")
            raise SendFailed(
                prepared.user_topic,
                [BrokerError(addr, reply.code, f"malformed send response: {exc!r}")],
            ) from None
        series = self._ok_series.get(prepared.user_topic) or self._ok_series.add(
            prepared.user_topic
        )
        series.add(time.monotonic() - started)
        return result

    async def send(
        self,
        prepared: Prepared,
        routing: Routing,
        timeout: float | None,
        first: FirstAttempt | None = None,
    ) -> SendResult:
        """Send with retries, within ``timeout`` (the producer's ``send_timeout`` if None);
        with ``first``, go on from that attempt (:meth:`start_first`), within its deadline."""
        if timeout is not None:  # (the hot path passes None: the producer's own, checked)
            timeout = check_timeout("timeout", timeout)
        self.in_flight += 1
        try:
            timeout = timeout or self.send_timeout
            deadline = time.monotonic() + timeout if first is None else first.deadline
            ordered = routing is not ROUND_ROBIN and routing.ordered
            attempts: list[RocketMQError] = []
            avoid: str | None = None
            not_ok: SendResult | None = None  # stored, but not flushed or replicated as asked
            batch = bool(prepared.batch_ids)
            code = _SEND_BATCH if batch else _SEND_V2
            for _ in range(1 if ordered else 1 + self.retry_times):
                outcome: RemotingCommand | RocketMQError | None = None
                if first is not None:  # the attempt start_first made: its outcome, as below
                    route, queue, addr, started = (
                        first.route,
                        first.queue,
                        first.addr,
                        first.started,
                    )
                    outcome, attempt_end, first = first.outcome, deadline, None
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        # the hot path: a cached route without even a coroutine
                        route = self._instance.routes.cached(
                            prepared.topic
                        ) or await self.route_within(prepared.topic, remaining)
                    except RocketMQError as exc:
                        # no route: every NameServer was asked already (and is cooling down);
                        # asking again at once cannot help (Java fails the send here too)
                        attempts.append(exc)
                        break
                    try:
                        queue = self.choose(route, routing, avoid)
                    except SendFailed as exc:  # (no writable queue in the route)
                        raise self._given_up(prepared.user_topic, attempts, exc) from exc
                    started = time.monotonic()
                    attempt_end = deadline
                    if self.attempt_timeout is not None and not ordered:
                        attempt_end = min(deadline, started + self.attempt_timeout)
                broker = queue.broker_name
                remaining = attempt_end - started
                try:
                    if outcome is not None:
                        if isinstance(outcome, RocketMQError):
                            raise outcome
                        reply = outcome
                    else:
                        if prepared.timer:  # (before encode: it may pick another broker's queue)
                            queue = await self.timer_queue(route, routing, queue, remaining)
                            broker = queue.broker_name
                            remaining = attempt_end - time.monotonic()
                        encode = AttemptFrame(self.encoder, prepared, queue, batch).encode
                        addr = route.master_addr(broker) or self.master(route, queue)
                        conn = self._instance.pool.registry.lookup(addr)
                        if conn is None or not conn.is_open:
                            conn = await self.connect_within(
                                addr, remaining, fail_over=self._elsewhere(route, broker, routing)
                            )
                            remaining = attempt_end - time.monotonic()
                        started_request = conn.start_encoded(code, encode, remaining, prepared.size)
                        if started_request is None:  # (it must wait for room first)
                            reply = await conn.request_encoded(
                                code, encode, remaining, prepared.size
                            )
                        else:
                            opaque, waiter = started_request
                            try:
                                reply = await waiter
                            finally:
                                conn.finish(opaque, waiter, prepared.size)
                except (SendFailed, UnsupportedByBroker) as exc:  # (no master, no 5.x master)
                    raise self._given_up(prepared.user_topic, attempts, exc) from exc
                except RocketMQError as exc:
                    if outcome is None:  # (a first attempt's was recorded as it ended)
                        self.attempt_failed(prepared.topic, broker, exc)
                    attempts.append(exc)
                    avoid = broker
                    METRICS.inc("rocketmq_client_send_retries_total", topic=prepared.user_topic)
                    log.info("producer.send.retry", topic=prepared.topic, broker=broker,
                             error=str(exc))  # fmt: skip
                    if not exc.retriable:
                        break
                    continue
                status = status_of_code(reply.code)
                if status is None:
                    error = broker_error(addr, reply.code, reply.remark)
                    attempts.append(error)
                    if route.auto_created and reply.code in _STALE_GUESS:
                        # the route was a guess from the template topic, and the topic has since
                        # been created with other queues: look again and retry
                        await self._instance.routes.refresh(prepared.topic)
                        continue
                    if not isinstance(error, AccessDenied):  # (who we are, not the broker)
                        self.faults.record(broker, 0, failed=True)
                        if reply.code in _NOT_MASTER:
                            self._instance.routes.mark_stale(prepared.topic)
                    if not error.retriable:
                        break
                    avoid = broker
                    continue
                result = self.result_of(prepared, queue, addr, reply, started, status=status)
                if status is not _SEND_OK and self.retry_not_stored_ok:
                    # Java's retryAnotherBrokerWhenNotStoreOK: stored here, but send it again
                    # elsewhere (a possible duplicate); the last such result if none is OK
                    not_ok, avoid = result, broker
                    continue
                return result
            if not_ok is not None:
                return not_ok
            if not attempts:  # the deadline passed before any attempt could start
                attempts.append(RequestTimeout("-", code, timeout))
            METRICS.inc("rocketmq_client_send_total", topic=prepared.user_topic, result="failed")
            raise SendFailed(prepared.user_topic, attempts) from attempts[-1]
        finally:
            self.in_flight -= 1
            if self.on_done is not None:
                self.on_done()  # a stop is waiting for sends in flight

    async def oneway(self, prepared: Prepared, routing: Routing) -> None:
        """Send without waiting for an answer, at most once, within ``send_timeout`` (a
        broker that stops reading fails it with WriteTimeout, inside SendFailed)."""
        deadline = time.monotonic() + self.send_timeout
        try:
            route = self._instance.routes.cached(prepared.topic) or await self.route_within(
                prepared.topic, self.send_timeout
            )
            queue = self.choose(route, routing, None)
            if prepared.timer:
                queue = await self.timer_queue(route, routing, queue, deadline - time.monotonic())
            addr = self.master(route, queue)
            conn = self._instance.pool.registry.lookup(addr)
            if conn is None or not conn.is_open:
                conn = await self.connect_within(addr, deadline - time.monotonic())
            born = time.time_ns() // 1_000_000

            def encode(opaque: int) -> bytes:
                return self.encoder.encode(
                    opaque, prepared.topic, queue.queue_id, prepared.body, born,
                    prepared.properties, queue.broker_name, sys_flag=prepared.sys_flag,
                    flag=prepared.flag, oneway=True,
                )  # fmt: skip

            timeout = max(deadline - time.monotonic(), 0.0)
            await conn.oneway_encoded(encode, prepared.size, timeout)
        except (SendFailed, UnsupportedByBroker):
            raise
        except RocketMQError as exc:
            raise SendFailed(prepared.user_topic, [exc]) from exc
