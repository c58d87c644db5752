"""Find stored messages by key, by unique key (the client's message id) or by offset message
id, as Java's ``MQAdminImpl`` does it, over a started
:class:`~rocketmq_actors.cluster.instance.ClientInstance`:

* :func:`query_messages` - QUERY_MESSAGE (12) to one address of every broker of the topic
  (the master, else a slave: Java's ``BrokerData.selectBrokerAddr``), in parallel; the
  replies' stored-message records merged, without duplicates, and filtered as Java's
  ``MQAdminImpl.queryMessage`` filters them (the index is a hash: a key query keeps the
  messages of that topic that carry the key, a unique-key query those whose id is the key);
* :func:`query_by_unique_key` - the same with the ``_UNIQUE_KEY_QUERY`` ext field
  (``MixAll.UNIQUE_MSG_QUERY_FLAG``), the first match (``queryMessageByUniqKey``);
* :func:`view_message` - VIEW_MESSAGE_BY_ID (33) to the store host the offset message id
  names, with the commit-log offset it holds (``MQAdminImpl.viewMessage``);
* :func:`find_message` - either id form, as ``mqadmin queryMsgById`` does: an offset id is
  viewed, and a unique key (or an offset id that finds nothing) is queried in ``topic``.

The broker indexes messages asynchronously (its ``IndexService`` runs after the commit log
is dispatched): a message just sent may not be found for a moment.
"""

from __future__ import annotations

import time

import anyio
import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ConfigError, RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketmq_actors.protocol.msgid import MessageIdInfo
from rocketmq_actors.protocol.msgid import decode_message_id as _decode
from rocketmq_actors.protocol.records import MessageExt, decode_messages

__all__ = [
    "END_OF_TIME",
    "InvalidMessageId",
    "MessageNotFound",
    "QueryResult",
    "decode_message_id",
    "find_message",
    "query_by_unique_key",
    "query_messages",
    "view_message",
]

log = get_logger("rocketmq_actors.query")

#: Java's ``Long.MAX_VALUE``, the end of ``mqadmin queryMsgByKey``'s default time range
END_OF_TIME = (1 << 63) - 1
#: ``queryMessageByUniqKey``'s default window: the last three days
UNIQUE_KEY_WINDOW_MS = 3 * 24 * 3600 * 1000
#: ``queryMessageByUniqKey``'s maxNum (the broker replaces it by its defaultQueryMaxNum)
UNIQUE_KEY_MAX_NUM = 32


class InvalidMessageId(ConfigError):
    """A string that is not a message id of either form (32 or 56 hex digits)."""


class MessageNotFound(RocketMQError):
    """No stored message has the id (or the broker it names no longer has it)."""


@attrs.frozen(kw_only=True)
class QueryResult:
    messages: list[MessageExt]
    #: the newest ``indexLastUpdateTimestamp`` of the brokers that answered (Java's QueryResult)
    index_last_update_ms: int
    #: broker name -> error, for brokers that failed (Java logs and skips them)
    failed: dict[str, str] = attrs.field(factory=dict)


def decode_message_id(msg_id: str) -> MessageIdInfo:
    """Which form ``msg_id`` is and what it holds (see :mod:`rocketmq_actors.protocol.msgid`);
    :class:`InvalidMessageId` for anything else."""
    try:
        return _decode(msg_id)
    except ProtocolError as exc:
        raise InvalidMessageId(f"msg_id: {exc}") from None


def _check(topic: object, key: object, max_num: object, begin_ms: object, end_ms: object) -> None:
    for name, value in (("topic", topic), ("key", key)):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{name}: a non-empty string, not {value!r}")
    if not isinstance(max_num, int) or isinstance(max_num, bool) or max_num < 1:
        raise ConfigError(f"max_num: a positive int, not {max_num!r}")
    for name, value in (("begin_ms", begin_ms), ("end_ms", end_ms)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= END_OF_TIME:
            raise ConfigError(f"{name}: epoch milliseconds (int >= 0), not {value!r}")
    assert isinstance(begin_ms, int) and isinstance(end_ms, int)
    if begin_ms > end_ms:
        raise ConfigError(f"begin_ms {begin_ms} is after end_ms {end_ms}")


async def _query_one(
    instance: ClientInstance, addr: str, header: QueryMessageRequestHeader
) -> tuple[list[MessageExt], int]:
    cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, header.to_ext())
    # Java waits timeoutMillis * 3 for a query: the broker reads the index and commit log
    reply = await instance.request(addr, cmd, instance.request_timeout * 3)
    if reply.code == ResponseCode.QUERY_NOT_FOUND:
        return [], 0
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error(addr, reply.code, reply.remark)
    try:
        index_ms = QueryMessageResponseHeader.from_ext(reply.ext_fields).index_last_update_timestamp
    except ProtocolError:  # a figure for information only: its absence loses no message
        index_ms = 0
    return decode_messages(reply.body or b"", strict=False), index_ms


def _matches(message: MessageExt, topic: str, key: str, unique: bool) -> bool:
    if unique:
        return message.msg_id == key
    return message.topic == topic and key in message.keys


async def query_messages(
    instance: ClientInstance, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0,
    end_ms: int = END_OF_TIME, unique: bool = False,
) -> QueryResult:  # fmt: skip
    """Messages of ``topic`` stored between ``begin_ms`` and ``end_ms`` (epoch ms) whose
    keys include ``key`` (or, with ``unique``, whose client id is ``key``), at most
    ``max_num`` from each broker, oldest first.
    :class:`~rocketmq_actors.errors.TopicNotFound` for a topic the NameServer does not know;
    when every broker fails, the first error."""
    _check(topic, key, max_num, begin_ms, end_ms)
    route = await instance.namesrv.topic_route(topic)
    addrs = {}
    for broker in route.broker_datas:
        addr = broker.master_addr or next(iter(sorted(broker.broker_addrs.items())), (0, None))[1]
        if addr is not None:
            addrs[broker.broker_name] = addr
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms,
        unique_key_query=unique,
    )  # fmt: skip
    found: dict[str, tuple[list[MessageExt], int]] = {}
    failed: dict[str, RocketMQError] = {}

    async def one(name: str, addr: str) -> None:
        try:
            found[name] = await _query_one(instance, addr, header)
        except ProtocolError as exc:  # records that do not decode: that broker's answer lost
            failed[name] = RocketMQError(f"{addr}: undecodable QUERY_MESSAGE reply: {exc}")
        except RocketMQError as exc:
            failed[name] = exc
        if name in failed:
            log.warning("query.broker_failed", broker=name, addr=addr, error=str(failed[name]))

    async with anyio.create_task_group() as tg:
        for name, addr in addrs.items():
            tg.start_soon(one, name, addr)
    if failed and not found:
        raise next(iter(failed.values()))
    merged: dict[tuple[bytes, int, int], MessageExt] = {}
    for name, (messages, _) in sorted(found.items()):
        for message in messages:
            message.broker_name = message.broker_name or name
            if _matches(message, topic, key, unique):
                # one record once: a broker's index may list a message another broker
                # also returns (the same store host and commit-log offset)
                merged.setdefault(
                    (message.store_ip, message.store_port, message.commit_log_offset), message
                )
    return QueryResult(
        messages=sorted(merged.values(), key=lambda m: (m.store_timestamp, m.offset_msg_id)),
        index_last_update_ms=max((ts for _, ts in found.values()), default=0),
        failed={name: str(exc) for name, exc in failed.items()},
    )


async def query_by_unique_key(
    instance: ClientInstance, topic: str, unique_key: str, *, begin_ms: int | None = None,
    end_ms: int = END_OF_TIME,
) -> MessageExt | None:  # fmt: skip
    """The message of ``topic`` whose client id (``UNIQ_KEY``) is ``unique_key``, stored
    since ``begin_ms`` (default: three days ago, as Java's ``queryMessageByUniqKey``)."""
    if begin_ms is None:
        begin_ms = max(0, time.time_ns() // 1_000_000 - UNIQUE_KEY_WINDOW_MS)
    result = await query_messages(
        instance, topic, unique_key, max_num=UNIQUE_KEY_MAX_NUM, begin_ms=begin_ms,
        end_ms=end_ms, unique=True,
    )  # fmt: skip
    return result.messages[0] if result.messages else None


async def view_message(
    instance: ClientInstance, offset_msg_id: str, *, topic: str | None = None
) -> MessageExt:
    """The message an offset message id names, from the store host in the id.
    :class:`InvalidMessageId` for a string that is not an offset id; :class:`MessageNotFound`
    when the broker has no message there (or one of another ``topic``)."""
    info = decode_message_id(offset_msg_id)
    if info.kind != "offset":
        raise InvalidMessageId(f"msg_id: {offset_msg_id!r} is a unique key, not an offset id")
    if topic is not None and (not isinstance(topic, str) or not topic.strip()):
        raise ConfigError(f"topic: a non-empty string or None, not {topic!r}")
    assert info.store_host is not None and info.commit_log_offset is not None
    header = ViewMessageRequestHeader(offset=info.commit_log_offset, topic=topic)
    cmd = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, header.to_ext())
    reply = await instance.request(info.store_host, cmd)
    if reply.code != ResponseCode.SUCCESS:
        # the broker answers SYSTEM_ERROR "can not find message by the offset" (QueryMessage
        # Processor.viewMessageById) for an offset it does not hold
        if "can not find" in (reply.remark or "").lower():
            raise MessageNotFound(f"no message at {info.store_host} offset "
                                  f"{info.commit_log_offset}: {reply.remark}")  # fmt: skip
        raise broker_error(info.store_host, reply.code, reply.remark)
    try:
        messages = decode_messages(reply.body or b"", strict=False)
    except ProtocolError as exc:  # an offset inside a record, not at its start
        raise MessageNotFound(f"no message starts at {info.msg_id}'s offset: {exc}") from None
    if not messages:
        raise MessageNotFound(f"{info.store_host} returned no message for {info.msg_id}")
    message = messages[0]
    if topic is not None and message.topic != topic:  # as MQClientAPIImpl.viewMessage
        raise MessageNotFound(f"{info.msg_id} is a message of {message.topic!r}, not {topic!r}")
    return message


async def find_message(
    instance: ClientInstance, msg_id: str, *, topic: str | None = None
) -> MessageExt:
    """The message with ``msg_id`` in either form: an offset id is viewed at its store host;
    a unique key - or an offset id that finds nothing there - is queried in ``topic`` (a
    unique key needs one: :class:`~rocketmq_actors.errors.ConfigError` without)."""
    info = decode_message_id(msg_id)
    first_error: RocketMQError | None = None
    if info.kind == "offset":
        try:
            return await view_message(instance, info.msg_id, topic=topic)
        except RocketMQError as exc:  # nothing there, or no such host: maybe a unique key
            first_error = exc
    if topic is None:
        if first_error is not None:
            raise first_error
        raise ConfigError(f"topic: {msg_id!r} is a unique key; finding it needs the topic")
    found = await query_by_unique_key(instance, topic, info.msg_id)
    if found is None:
        raise first_error or MessageNotFound(f"no message {info.msg_id} in topic {topic!r}")
    return found
