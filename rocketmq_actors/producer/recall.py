"""Recall of a timer message before its delivery time (RocketMQ 5.3.2+): ``Producer.recall``.

Java: ``DefaultMQProducerImpl.recallMessage`` (the topic checked, the handle decoded, the
request sent to the master of the broker the handle names) and the broker's
``RecallMessageProcessor``, whose answers are mapped to typed errors here:

* NO_PERMISSION "operation is forbidden": the broker's ``recallMessageEnable`` is false
  (its default) - :class:`RecallDisabled`;
* ILLEGAL_OPERATION "timestamp invalid": the delivery time has passed (the message was
  delivered) or is beyond ``timerMaxDelaySec`` - :class:`RecallTooLate`;
* ILLEGAL_OPERATION otherwise (topic not matching the handle's, a handle of another broker,
  a handle it cannot decode), SLAVE_NOT_AVAILABLE, SERVICE_NOT_AVAILABLE, TOPIC_NOT_EXIST,
  SYSTEM_ERROR - :class:`RecallFailed` (``code``, ``remark``; ``retriable`` by the code);
* REQUEST_CODE_NOT_SUPPORTED (a broker older than 5.3.2 whose version was not known) -
  :class:`UnsupportedByBroker`, as when the version is known before the request.

A well-formed handle of a message the broker never stored (or already recalled) is answered
SUCCESS: the broker only writes a delete marker for that id into its timer store.
"""

from __future__ import annotations

import time

import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.versions import RECALL_MIN_VERSION, version_name
from rocketmq_actors.errors import (
    AccessDenied,
    InvalidRecallHandle,
    RecallDisabled,
    RecallFailed,
    RecallTooLate,
    RequestTimeout,
    RocketMQError,
    UnsupportedByBroker,
    broker_error,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import unwrap, validate_topic, wrap
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.recall import (
    RecallHandle,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)

from .sendloop import SendLoop

__all__ = ["RecallResult", "decode_handle", "recall"]

log = get_logger("rocketmq_actors.producer")

_FEATURE = "recall (RECALL_MESSAGE)"
_NEEDS = "a RocketMQ 5.3.2 or newer broker"


@attrs.frozen(kw_only=True)
class RecallResult:
    """A recall the broker accepted: the message (``msg_id``, its unique id) will not be
    delivered at ``deliver_at_ms``."""

    topic: str  # without the producer's namespace
    broker_name: str
    msg_id: str
    deliver_at_ms: int


def decode_handle(topic: str, handle: object, namespace: str | None = None) -> RecallHandle:
    """``handle`` decoded and checked against ``topic`` (as the application names it), before
    any I/O: :class:`InvalidRecallHandle` if it is not a handle or names another topic."""
    validate_topic(topic)
    if topic.startswith(("%RETRY%", "%DLQ%")):  # as DefaultMQProducerImpl.recallMessage
        raise InvalidRecallHandle(f"recall from {topic!r}: retry and DLQ topics are not recalled")
    try:
        decoded = RecallHandle.decode(handle)
    except ProtocolError as exc:
        raise InvalidRecallHandle(f"recall_handle is not a recall handle ({exc.detail})") from None
    wired = wrap(namespace, topic)
    if decoded.topic != wired:
        raise InvalidRecallHandle(f"recall_handle is for topic {decoded.topic!r}, not {wired!r}")
    return decoded


async def recall(
    instance: ClientInstance,
    loop: SendLoop,
    group: str,
    topic: str,
    handle: str,
    *,
    namespace: str | None,
    timeout: float,
) -> RecallResult:
    """RECALL_MESSAGE to the master of the handle's broker, within ``timeout``."""
    decoded = decode_handle(topic, handle, namespace)
    deadline = time.monotonic() + timeout
    route = await loop.route_within(decoded.topic, timeout)
    addr = route.master_addr(decoded.broker_name)
    if addr is None:
        raise RecallFailed(decoded.broker_name, ResponseCode.SERVICE_NOT_AVAILABLE,
                           f"no master of {decoded.broker_name} in the route of "
                           f"{decoded.topic}")  # fmt: skip
    version = await instance.heartbeat.version_of(addr, _left(deadline, timeout))
    if version < RECALL_MIN_VERSION:
        raise UnsupportedByBroker(_FEATURE, addr, version_name(version), needs=_NEEDS)
    header = RecallMessageRequestHeader(producer_group=group, topic=decoded.topic,
                                        recall_handle=handle,
                                        broker_name=decoded.broker_name)  # fmt: skip
    reply = await instance.request(
        addr,
        RemotingCommand.request(RequestCode.RECALL_MESSAGE, header.to_ext()),
        _left(deadline, timeout),
    )
    if reply.code == ResponseCode.SUCCESS:
        try:
            msg_id = RecallMessageResponseHeader.from_ext(reply.ext_fields).msg_id
        except ProtocolError:  # (the answer carries the id; a missing one changes nothing)
            msg_id = decoded.msg_id
        log.info("producer.recalled", topic=decoded.topic, broker=decoded.broker_name,
                 msg_id=msg_id)  # fmt: skip
        return RecallResult(topic=unwrap(namespace, decoded.topic),
                            broker_name=decoded.broker_name, msg_id=msg_id,
                            deliver_at_ms=decoded.deliver_at_ms)  # fmt: skip
    raise _refused(addr, reply.code, reply.remark, version)


def _left(deadline: float, timeout: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise RequestTimeout("-", RequestCode.RECALL_MESSAGE, timeout)
    return left


def _refused(addr: str, code: int, remark: str | None, version: int) -> RocketMQError:
    """The typed error of a broker's refusal (RecallMessageProcessor's answers)."""
    text = (remark or "").lower()
    if code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        return UnsupportedByBroker(_FEATURE, addr, version_name(version), needs=_NEEDS)
    generic = broker_error(addr, code, remark)
    if isinstance(generic, AccessDenied):
        return generic
    if code == ResponseCode.NO_PERMISSION and "forbidden" in text:
        return RecallDisabled(addr, code, remark)
    if code == ResponseCode.ILLEGAL_OPERATION and "timestamp invalid" in text:
        return RecallTooLate(addr, code, remark)
    return RecallFailed(addr, code, remark)
