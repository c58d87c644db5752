"""Checking and preparing a message for the wire, before any network I/O.

Validation follows the Java client's ``Validators``: a topic of at most 127 characters from
``[%|a-zA-Z0-9_-]`` that is not one of the broker's own (``NOT_ALLOWED_SEND_TOPICS``); a
non-empty body no larger than the maximum message size; property names and values free of the
separators (U+0001, U+0002) and names not reserved by the client; a delay level from 1 to 18
and at most one delay mechanism.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

import attrs

from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.names import validate_topic, wrap
from rocketmq_actors.protocol.compression import CompressionType, compress
from rocketmq_actors.protocol.messages import (
    BATCH_PROPS_LENGTH,
    BATCH_RECORD_HEAD,
    MAX_BATCH_PROPERTIES,
    RESERVED_PROPERTIES,
    Message,
    Property,
    UniqueIdGenerator,
    encode_properties,
)
from rocketmq_actors.protocol.sendframe import BatchBody

__all__ = [
    "RETRY_PREFIX", "UNIQ_PREFIX", "Prepared", "check_message", "is_plain", "prepare",
    "prepare_batch",
]  # fmt: skip

MAX_DELAY_LEVEL = 18
#: a message's encoded properties: a broker refuses more (CommitLog's 16-bit length)
MAX_PROPERTIES = MAX_BATCH_PROPERTIES
UNIQ_PREFIX = f"{Property.UNIQ_KEY}\x01"
RETRY_PREFIX = "%RETRY%"  # a retry topic's prefix: no batch goes there (the broker refuses it)


#: the range of a message's flag: a Java int, as the broker reads it
FLAG_MIN, FLAG_MAX = -(1 << 31), (1 << 31) - 1


def _check_text(what: str, text: str) -> None:
    if "\x01" in text or "\x02" in text:
        raise InvalidMessage(f"{what} {text!r} contains a reserved separator (U+0001/U+0002)")
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            raise InvalidMessage(f"{what} {text!r} cannot be encoded as UTF-8") from None


def check_message(msg: object, where: str = "") -> Message:
    """``msg`` if it is a :class:`Message`, else :class:`InvalidMessage` (not the
    AttributeError that reading its fields would raise)."""
    if msg.__class__ is Message or isinstance(msg, Message):
        return msg
    raise InvalidMessage(f"{where}expected a Message, not {type(msg).__name__}")


def _check_batch_shape(messages: object) -> None:
    if isinstance(messages, (Message, str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidMessage(f"send_batch takes a list of messages, not {_type_name(messages)}")
    if not messages:
        raise InvalidMessage("the batch is empty")


def check_batch(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` if it is a non-empty sequence of :class:`Message`, else
    :class:`InvalidMessage` naming the mistake (:func:`prepare_batch` checks each message as
    it encodes it; this is for callers that read the messages before)."""
    _check_batch_shape(messages)
    for i, message in enumerate(messages):
        check_message(message, f"message {i} of the batch: ")
    return messages


def _type_name(value: object) -> str:
    return type(value).__name__


def _validate(msg: Message, max_size: int) -> None:
    validate_topic(msg.topic)
    if msg.value is not None:
        if len(msg.body):
            raise InvalidMessage("give the message a body (bytes) or a value, not both")
        raise InvalidMessage(
            "the message has a value but the producer has no value_serializer: pass "
            "value_serializer=... to the producer, or give body=<bytes>"
        )
    if not isinstance(msg.body, (bytes, bytearray, memoryview)):
        hint = (
            " (encode it, or set value= with a value_serializer)"
            if isinstance(msg.body, str)
            else ""
        )
        raise InvalidMessage(f"the body must be bytes, not {_type_name(msg.body)}{hint}")
    if len(msg.body) == 0:
        raise InvalidMessage("the body is empty")
    if len(msg.body) > max_size:
        raise InvalidMessage(f"the body has {len(msg.body)} bytes, over the {max_size}-byte limit")
    if not isinstance(msg.properties, Mapping):
        raise InvalidMessage(
            f"properties must be a mapping of str to str, not {_type_name(msg.properties)}"
        )
    for name, value in msg.properties.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidMessage(
                f"properties must map str to str, got {name!r}: {value!r} "
                f"({_type_name(name)}: {_type_name(value)})"
            )
        _check_text("property name", name)
        _check_text("property value", value)
        if name in RESERVED_PROPERTIES:
            raise InvalidMessage(f"property name {name!r} is reserved by the client")
    if msg.tags is not None:
        if not isinstance(msg.tags, str):
            raise InvalidMessage(f"tags must be a str, not {_type_name(msg.tags)}")
        _check_text("tags", msg.tags)
    if msg.flag.__class__ is not int:
        raise InvalidMessage(f"flag must be an int, not {_type_name(msg.flag)}")
    if not FLAG_MIN <= msg.flag <= FLAG_MAX:
        raise InvalidMessage(f"flag {msg.flag} does not fit in 32 bits (a Java int)")
    for key in msg.keys:
        if not isinstance(key, str):
            raise InvalidMessage(f"keys must be strings, not {type(key).__name__}")
        _check_text("key", key)
        if not key or " " in key:
            raise InvalidMessage(f"key {key!r} must be non-empty and contain no space")
    if msg.delay_level or msg.deliver_at_ms is not None or msg.delay_ms is not None:
        _validate_delay(msg)


def _validate_delay(msg: Message) -> None:
    for name in ("delay_level", "deliver_at_ms", "delay_ms"):
        value = getattr(msg, name)
        if value is not None and (value.__class__ is bool or not isinstance(value, int)):
            raise InvalidMessage(f"{name} must be an int, not {_type_name(value)}")
    if msg.delay_level and not 1 <= msg.delay_level <= MAX_DELAY_LEVEL:
        raise InvalidMessage(f"delay level {msg.delay_level} is outside 1..{MAX_DELAY_LEVEL}")
    delays = [msg.delay_level > 0, msg.deliver_at_ms is not None, msg.delay_ms is not None]
    if sum(delays) > 1:
        raise InvalidMessage("use only one of delay_level, deliver_at_ms and delay_ms")
    if msg.delay_ms is not None and msg.delay_ms < 0:
        raise InvalidMessage("delay_ms must not be negative")


@attrs.define
class Prepared:
    """A validated message (or batch) ready for the wire. (Internal and never changed after
    it is built; not frozen, because a frozen attrs ``__init__`` costs more a send in
    benchmarks/producer.py; the plain message's path builds it positionally, in field order,
    because keyword arguments cost more there too: benchmarks/abtest.py.)"""

    topic: str  # as sent (namespace-wrapped)
    user_topic: str
    body: bytes | BatchBody  # a batch's: its records' parts
    properties: str  # encoded
    msg_id: str  # UNIQ_KEY ("" for a batch: batch_ids has its messages')
    sys_flag: int = 0
    flag: int = 0
    batch_ids: Sequence[str] = ()
    timer: bool = False  # 5.x timer delivery: the broker's version is checked before sending
    #: auto-batching may join it with others (:mod:`.autobatch`): waits for the store, and has
    #: no delay, no compression, no system flag and no property of a transaction or a request
    batchable: bool = False
    #: the body's length, read several times a send (admission, the connection's in-flight
    #: bytes): a field, not a property computing it each time (a copy with another body,
    #: ``attrs.evolve``, must give its size too)
    size: int = attrs.field(default=attrs.Factory(lambda self: len(self.body), takes_self=True))


def is_plain(msg: Message, max_size: int, compress_threshold: int) -> bool:
    """Is ``msg`` plain: a bytes body of a valid size, below the compression threshold, and no
    properties, tags, keys or delay (UNIQ_KEY is its only property on the wire)? An object that
    is not a :class:`Message` raises AttributeError."""
    body = msg.body
    return not (msg.properties or msg.tags or msg.keys or msg.delay_level
        or msg.deliver_at_ms is not None or msg.delay_ms is not None or not msg.wait_store
        or body.__class__ is not bytes or not 0 < len(body) <= max_size
        or msg.value is not None or msg.flag.__class__ is not int
        or not FLAG_MIN <= msg.flag <= FLAG_MAX
        or (compress_threshold and len(body) >= compress_threshold))  # fmt: skip


def prepare(
    msg: Message,
    *,
    ids: UniqueIdGenerator,
    namespace: str | None,
    max_size: int,
    compress_threshold: int,
    compress_level: int,
    compress_type: CompressionType = CompressionType.ZLIB,
    extra: dict[str, str] | None = None,
    sys_flag: int = 0,
) -> Prepared:
    try:  # (a try costs nothing until it catches: a Message pays no type check here)
        plain = not extra and is_plain(msg, max_size, compress_threshold)
    except AttributeError:  # not a Message: InvalidMessage saying so
        check_message(msg)
        raise
    if plain:  # the checks of is_plain are all that _validate would make
        validate_topic(msg.topic)
        msg_id = ids.next_id()
        topic = msg.topic
        body = msg.body
        return Prepared(
            topic if namespace is None else wrap(namespace, topic), topic, body,
            f"{UNIQ_PREFIX}{msg_id}\x02", msg_id, sys_flag, msg.flag, (), False,
            not sys_flag and not topic.startswith(RETRY_PREFIX), len(body),
        )  # fmt: skip
    _validate(msg, max_size)
    props = msg.wire_properties()
    if extra:
        props.update(extra)
    msg_id = ids.next_id()
    props[Property.UNIQ_KEY] = msg_id
    body = bytes(msg.body)
    if compress_threshold and len(body) >= compress_threshold:
        body = compress(body, compress_type, compress_level)
        sys_flag |= compress_type.sys_flag
    properties = encode_properties(props)
    timer = msg.deliver_at_ms is not None or msg.delay_ms is not None
    # (a str of n characters encodes to at most 3n bytes: only a long one is measured)
    if len(properties) * 3 > MAX_PROPERTIES and len(properties.encode()) > MAX_PROPERTIES:
        raise InvalidMessage(
            f"the properties encode to {len(properties.encode())} bytes, over the "
            f"{MAX_PROPERTIES} a broker stores"
        )
    return Prepared(
        topic=wrap(namespace, msg.topic),
        user_topic=msg.topic,
        body=body,
        properties=properties,
        msg_id=msg_id,
        sys_flag=sys_flag,
        flag=msg.flag,
        timer=timer,
        batchable=not (
            sys_flag
            or extra
            or msg.delay_level
            or timer
            or not msg.wait_store
            or msg.topic.startswith(RETRY_PREFIX)
        ),
    )


def prepare_batch(
    messages: Sequence[Message],
    *,
    ids: UniqueIdGenerator,
    namespace: str | None,
    max_size: int,
) -> list[Prepared]:
    """Validate a batch and cut it into SEND_BATCH_MESSAGE bodies of at most ``max_size``."""
    _check_batch_shape(messages)
    topic = check_message(messages[0], "message 0 of the batch: ").topic
    wait = messages[0].wait_store
    validate_topic(topic)  # (every message must have this one)
    if topic.startswith(RETRY_PREFIX):
        raise InvalidMessage("batches cannot be sent to retry topics")
    # Each message is encoded as it is checked, straight into its chunk's parts: 20 bytes of
    # head (total, magic, crc, flag, body length), the body, then the properties behind their
    # 2-byte length (one part), UNIQ_KEY last (where a dict insertion would put it).
    head, props_length = BATCH_RECORD_HEAD.pack, BATCH_PROPS_LENGTH.pack
    chunks: list[Prepared] = []
    parts: list[bytes] = []
    msg_ids = ids.next_ids(len(messages))
    # a plain message's tail is "UNIQ_KEY\x01<id>\x02" behind its length: the ids are of one
    # length, so the length's two bytes (ASCII, below 128) lead the same f-string
    uniq = UNIQ_PREFIX
    plain = f"{uniq}{msg_ids[0]}\x02".encode()
    plain_tail = _ascii_length(len(plain)) + uniq
    if wait:
        uniform = _uniform_batch(messages, topic, msg_ids, plain_tail, max_size)
        if uniform is not None:
            parts, size = uniform
            return [_batch(parts, size, msg_ids, topic, namespace, wait)]
    first = size = 0  # the current chunk: messages[first:], size bytes
    last_record = last_length = last_flag = -1  # the last record head's figures
    record_head = b""
    for index, msg in enumerate(messages):
        if msg.__class__ is not Message:
            check_message(msg, f"message {index} of the batch: ")
        if msg.topic != topic:
            raise InvalidMessage("every message of a batch must have the same topic")
        if msg.wait_store != wait:
            raise InvalidMessage("every message of a batch must have the same wait_store")
        if msg.delay_level or msg.deliver_at_ms is not None or msg.delay_ms is not None:
            raise InvalidMessage("batch messages cannot be delayed")
        body = msg.body
        if (msg.properties or msg.tags or msg.keys or not wait or msg.value is not None
                or msg.flag.__class__ is not int or not FLAG_MIN <= msg.flag <= FLAG_MAX
                or body.__class__ is not bytes or not 0 < len(body) <= max_size):  # fmt: skip
            _validate(msg, max_size)  # every check, and its error
            props = f"{encode_properties(msg.wire_properties())}{uniq}{msg_ids[index]}\x02"
            props_bytes = props.encode()
            if len(props_bytes) > MAX_BATCH_PROPERTIES:
                raise InvalidMessage(
                    f"the properties of message {index} of the batch encode to "
                    f"{len(props_bytes)} bytes, over the {MAX_BATCH_PROPERTIES} a batch holds"
                )
            tail = props_length(len(props_bytes)) + props_bytes
            body = bytes(body)
        else:
            # a plain message (bytes body of a valid size, no properties, tags or keys; WAIT
            # is the batch's): the checks above are all that _validate would make
            tail = f"{plain_tail}{msg_ids[index]}\x02".encode()
        length = len(body)
        record = 20 + length + len(tail)
        if record > max_size:  # alone in a chunk it would still be refused by the broker
            raise InvalidMessage(
                f"message {index} of the batch encodes to {record} bytes (body, properties "
                f"and record head), over the {max_size}-byte limit"
            )
        if index > first and size + record > max_size:
            chunks.append(_batch(parts, size, msg_ids[first:index], topic, namespace, wait))
            parts, first, size = [], index, 0
        if record != last_record or length != last_length or msg.flag != last_flag:
            last_record, last_length, last_flag = record, length, msg.flag  # else: same head
            record_head = head(record, 0, 0, msg.flag, length)
        parts += (record_head, body, tail)
        size += record
    chunks.append(_batch(parts, size, msg_ids[first:], topic, namespace, wait))
    return chunks


_body = operator.attrgetter("body")


def _uniform_batch(
    messages: Sequence[Message],
    topic: str,
    msg_ids: list[str],
    plain_tail: str,
    max_size: int,
) -> tuple[list[bytes], int] | None:
    """The common batch in one chunk, or None for the general loop: every message plain (as
    there), waiting for the store, of one body length and flag. One record head serves every
    message, and the tails (``plain_tail``, id, ``\x02``) are encoded in one piece and split."""
    first = messages[0]
    if first.body.__class__ is not bytes:  # (before len(): the general loop's error for it)
        return None
    length = len(first.body)
    flag = first.flag
    if not 0 < length <= max_size or flag.__class__ is not int or not FLAG_MIN <= flag <= FLAG_MAX:
        return None
    for msg in messages:
        if msg.__class__ is not Message:
            return None
        body = msg.body
        if (msg.topic != topic or not msg.wait_store or msg.delay_level or msg.value is not None
                or msg.deliver_at_ms is not None or msg.delay_ms is not None or msg.properties
                or msg.tags or msg.keys or body.__class__ is not bytes or len(body) != length
                or msg.flag != flag):  # fmt: skip
            return None
    # (hex digits and the tail's own characters hold no \x03 to split at)
    between = f"\x02\x03{plain_tail}"
    tails = f"{plain_tail}{between.join(msg_ids)}\x02".encode().split(b"\x03")
    record = 20 + length + len(tails[0])
    count = len(messages)
    if record * count > max_size:
        return None
    parts = [BATCH_RECORD_HEAD.pack(record, 0, 0, flag, length)] * (3 * count)
    parts[1::3] = map(_body, messages)
    parts[2::3] = tails
    return parts, record * count


def _ascii_length(length: int) -> str:
    """The 2-byte big-endian length ``length`` as the two characters that encode to it."""
    if not 0 <= length < 128:
        raise ValueError(f"{length} needs more than ASCII")
    return f"\x00{chr(length)}"


def _batch(  # noqa: PLR0917
    parts: list[bytes],
    size: int,
    chunk_ids: list[str],
    topic: str,
    namespace: str | None,
    wait: bool,
) -> Prepared:
    # A 5.x broker appends the batch-level properties to every inner message: a batch-level
    # UNIQ_KEY would replace each message's own (the Java client sets none on the batch).
    props = {} if wait else {Property.WAIT: "false"}
    return Prepared(
        topic=wrap(namespace, topic),
        user_topic=topic,
        body=BatchBody(parts, size),
        properties=encode_properties(props),
        msg_id="",
        batch_ids=chunk_ids,
    )
