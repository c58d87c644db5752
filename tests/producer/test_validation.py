"""Bad input is a typed error raised before any network I/O."""

from __future__ import annotations

import struct
import zlib

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_actors.errors import ClientNotStarted, ConfigError, InvalidMessage, RocketMQError
from rocketmq_actors.names import validate_topic
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.producer.prepare import prepare, prepare_batch
from rocketmq_actors.protocol.compression import CompressionType, decompress
from rocketmq_actors.protocol.messages import (
    MAX_MESSAGE_SIZE,
    MessageSysFlag,
    Property,
    UniqueIdGenerator,
    decode_properties,
    encode_batch,
    encode_properties,
)


def _message(**kwargs: object) -> Message:
    values: dict[str, object] = {"topic": "T", "body": b"x"}
    values.update(kwargs)
    return Message(**values)  # type: ignore[arg-type]


BAD = [
    ("empty topic", _message(topic="")),
    ("illegal topic", _message(topic="a b")),
    ("long topic", _message(topic="t" * 128)),
    ("schedule topic", _message(topic="SCHEDULE_TOPIC_XXXX")),
    ("half topic", _message(topic="RMQ_SYS_TRANS_HALF_TOPIC")),
    ("long DLQ topic", _message(topic="%DLQ%" + "g" * 251)),
    ("empty body", _message(body=b"")),
    ("body not bytes", _message(body="text")),
    ("body None", _message(body=None)),
    ("body over the limit", _message(body=b"x" * (4 * 1024 * 1024 + 1))),
    ("delay level 19", _message(delay_level=19)),
    ("negative delay level", _message(delay_level=-1)),
    ("two delays", _message(delay_level=1, delay_ms=5)),
    ("reserved property", _message(properties={"UNIQ_KEY": "x"})),
    ("separator in property", _message(properties={"a\x01": "b"})),
    ("properties over 32,767 bytes", _message(properties={"big": "\u00e9" * 16384})),
    ("space in key", _message(keys=["a b"])),
    ("flag past 32 bits", _message(flag=1 << 31)),
    ("flag below 32 bits", _message(flag=-(1 << 31) - 1)),
    ("tags not UTF-8", _message(tags="\ud800")),
    ("property not UTF-8", _message(properties={"p": "\udc00"})),
    ("topic not a str", _message(topic=123)),
    ("topic bytes", _message(topic=b"T")),
    ("topic a list", _message(topic=["T"])),
]


@pytest.mark.parametrize("auto_batch", [False, True], ids=["alone", "auto-batched"])
@pytest.mark.parametrize(("what", "message"), BAD, ids=[b[0] for b in BAD])
async def test_bad_messages_fail_before_any_io(
    what: str, message: Message, auto_batch: bool
) -> None:
    # a producer never started cannot have done any I/O: the message is refused first (an
    # auto-batching one's plain messages take a path of their own: the same checks)
    options = ProducerOptions(auto_batch=auto_batch)
    producer = Producer(namesrv="127.0.0.1:1", group="G", options=options)
    with pytest.raises(InvalidMessage):
        await producer.send(message)
    with pytest.raises(InvalidMessage):
        await producer.submit(message)
    with pytest.raises(InvalidMessage):
        producer.send_nowait(message)
    with pytest.raises(InvalidMessage):
        await producer.send_oneway(message)
    with pytest.raises(InvalidMessage) as single:
        await producer.send(message)
    assert isinstance(single.value, RocketMQError)  # one `except RocketMQError` catches all
    good = attrs.evolve(message, body=b"x", delay_level=0, delay_ms=None, properties={},
                        keys=())  # fmt: skip
    for batch in ([message], [message, message], [good, message]):
        with pytest.raises(InvalidMessage) as batched:
            await producer.send_batch(batch)
        if batch[0] is message and "delay" not in what and "properties over" not in what:
            # the batch's fast path for plain messages skips no check a send makes
            assert str(batched.value) == str(single.value)
    assert producer.instance.pool.connects == 0


async def test_a_good_message_on_a_producer_not_started_is_a_typed_error() -> None:
    producer = Producer(namesrv="127.0.0.1:1", group="G")
    for call in (producer.send, producer.submit, producer.send_oneway):
        with pytest.raises(ClientNotStarted):
            await call(_message())
    with pytest.raises(ClientNotStarted):
        producer.send_nowait(_message())
    with pytest.raises(ClientNotStarted):
        await producer.send_batch([_message()])


def test_bad_producer_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    with pytest.raises(ValueError, match=r"namesrv=\.\.\. or \$NAMESRV_ADDR"):
        Producer(group="G")
    with pytest.raises(ValueError, match="group"):
        Producer(namesrv="127.0.0.1:9876", group="bad group")
    with pytest.raises(ValueError):
        Producer(namesrv="nonsense", group="G")
    with pytest.raises(ValueError):
        Producer(namesrv="127.0.0.1:9876", options=ProducerOptions(send_timeout=0))


def test_system_topics_as_java_validators_treats_them() -> None:
    """Java refuses to send only to TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET (the broker's
    own topics); the trace topic, TBW102 and other RMQ_SYS_ names may be sent to; any topic
    may be subscribed to; retry and DLQ topics may have up to 255 characters."""
    for topic in ("RMQ_SYS_TRACE_TOPIC", "TBW102", "RMQ_SYS_X", "%DLQ%" + "g" * 250):
        prepare(Message(topic=topic, body=b"x"), ids=UniqueIdGenerator(), namespace=None,
                max_size=MAX_MESSAGE_SIZE, compress_threshold=0, compress_level=5)  # fmt: skip
    for topic in ("SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT", "RMQ_SYS_TRACE_TOPIC"):
        validate_topic(topic, error=ConfigError)  # a subscription's topic
    with pytest.raises(InvalidMessage, match="forbidden"):
        validate_topic("OFFSET_MOVED_EVENT")
    with pytest.raises(ConfigError, match="longer than 127"):
        validate_topic("t" * 128, error=ConfigError)


def test_the_nameserver_comes_from_namesrv_addr_when_not_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As the Java client (ClientConfig reads NAMESRV_ADDR): ``namesrv=`` wins when given."""
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
    assert Producer(group="G").instance.namesrv.addrs == ("10.0.0.1:9876", "10.0.0.2:9876")
    assert Producer(namesrv="127.0.0.1:9876").instance.namesrv.addrs == ("127.0.0.1:9876",)
    monkeypatch.setenv("NAMESRV_ADDR", "not an address")
    with pytest.raises(ConfigError):
        Producer(group="G")


def test_keys_a_string_is_one_key_a_list_several() -> None:
    assert Message(topic="T", body=b"x", keys="order-1").wire_properties()["KEYS"] == "order-1"
    assert Message(topic="T", body=b"x", keys="a b").keys == ("a", "b")  # as Java's setKeys
    assert Message(topic="T", body=b"x", keys=["a", "b"]).wire_properties()["KEYS"] == "a b"
    assert Message(topic="T", body=b"x").keys == ()


@pytest.mark.parametrize("keys", [[1], [b"k"], ["a b"], [""]])
def test_bad_keys_are_invalid_messages(keys: list[object]) -> None:
    message = Message(topic="T", body=b"x", keys=keys)  # type: ignore[arg-type]
    with pytest.raises(InvalidMessage, match="key"):
        prepare(message, ids=UniqueIdGenerator(), namespace=None, max_size=MAX_MESSAGE_SIZE,
                compress_threshold=0, compress_level=5)  # fmt: skip


def test_compress_type_and_level_are_checked_when_the_options_are_built() -> None:
    assert ProducerOptions().compress_type is CompressionType.ZLIB  # Java's default
    assert ProducerOptions(compress_type="LZ4").compress_type is CompressionType.LZ4
    assert ProducerOptions(compress_type="zstd", compress_level=19).compress_level == 19
    with pytest.raises(ConfigError, match="compress_type must be one of 'zlib', 'lz4', 'zstd'"):
        ProducerOptions(compress_type="snappy")
    with pytest.raises(ConfigError, match="compress_type"):
        ProducerOptions(compress_type=3)
    with pytest.raises(ConfigError, match="compress_level"):
        ProducerOptions(compress_level=10)  # zlib stops at 9
    with pytest.raises(ConfigError, match="compress_level"):
        ProducerOptions(compress_type=CompressionType.ZSTD, compress_level=23)
    producer = Producer(namesrv="127.0.0.1:9876", options=ProducerOptions(compress_type="lz4"))
    assert producer.options.compress_type is CompressionType.LZ4


@pytest.mark.parametrize("kind", list(CompressionType))
def test_bodies_over_the_threshold_are_compressed_with_the_chosen_type(
    kind: CompressionType,
) -> None:
    body = b"compress me " * 1000
    got = prepare(Message(topic="T", body=body), ids=UniqueIdGenerator(), namespace=None,
                  max_size=MAX_MESSAGE_SIZE, compress_threshold=4096, compress_level=5,
                  compress_type=kind)  # fmt: skip
    assert isinstance(got.body, bytes) and got.sys_flag == kind.sys_flag
    assert decompress(got.body, got.sys_flag) == body


def decode_batch_properties(body: bytes) -> list[dict[str, str]]:
    """The properties of each record of a SEND_BATCH_MESSAGE body."""
    out, pos = [], 0
    while pos < len(body):
        total, _, _, _, body_len = struct.unpack_from(">iiiii", body, pos)
        (props_len,) = struct.unpack_from(">h", body, pos + 20 + body_len)
        start = pos + 22 + body_len
        out.append(decode_properties(body[start : start + props_len].decode()))
        pos += total
    return out


def test_batches_are_cut_at_the_size_limit_and_checked() -> None:
    ids = UniqueIdGenerator()
    messages = [Message(topic="T", body=b"x" * 1000) for _ in range(100)]
    chunks = prepare_batch(messages, ids=ids, namespace=None, max_size=10_000)
    assert all(c.size <= 10_000 for c in chunks) and len(chunks) > 10
    assert sum(len(c.batch_ids) for c in chunks) == 100
    # each inner message carries its own UNIQ_KEY, the id the batch reports for it
    inner = decode_batch_properties(bytes(chunks[0].body))
    assert [p[Property.UNIQ_KEY] for p in inner] == list(chunks[0].batch_ids)
    tagged = prepare_batch([Message(topic="T", body=b"y", tags="a", keys=["k1", "k2"])],
                           ids=ids, namespace=None, max_size=10_000)  # fmt: skip
    (props,) = decode_batch_properties(bytes(tagged[0].body))
    assert props == {Property.TAGS: "a", Property.KEYS: "k1 k2",
                     Property.UNIQ_KEY: tagged[0].batch_ids[0]}  # fmt: skip
    with pytest.raises(InvalidMessage, match="same topic"):
        prepare_batch([Message(topic="A", body=b"x"), Message(topic="B", body=b"x")],
                      ids=ids, namespace=None, max_size=10_000)  # fmt: skip
    with pytest.raises(InvalidMessage, match="delayed"):
        prepare_batch([Message(topic="A", body=b"x", delay_level=1)], ids=ids, namespace=None,
                      max_size=10_000)  # fmt: skip
    with pytest.raises(InvalidMessage, match="empty"):
        prepare_batch([], ids=ids, namespace=None, max_size=10_000)
    # a record's properties length is a signed 16-bit field
    with pytest.raises(InvalidMessage, match="32767"):
        prepare_batch([Message(topic="T", body=b"x", properties={"p": "v" * 40_000})],
                      ids=ids, namespace=None, max_size=1 << 20)  # fmt: skip
    # a message whose body fits but whose record (head, properties) does not: refused here,
    # not sent alone in a chunk the broker refuses (three times, with the retries)
    with pytest.raises(InvalidMessage, match="message 1 of the batch encodes to"):
        prepare_batch([Message(topic="T", body=b"x"), Message(topic="T", body=b"x" * 10_000)],
                      ids=ids, namespace=None, max_size=10_000)  # fmt: skip
    with pytest.raises(InvalidMessage, match="message 0 of the batch encodes to"):
        prepare_batch([Message(topic="T", body=b"x" * 9990)] * 3, ids=ids, namespace=None,
                      max_size=10_000)  # fmt: skip


_texts = st.text(alphabet="abcXYZ019-_ ", max_size=6)


@settings(max_examples=400, deadline=None)
@given(
    tags=st.one_of(st.none(), _texts.filter(lambda t: " " not in t)),
    keys=st.lists(st.text(alphabet="abk1", min_size=1, max_size=4), max_size=2),
    properties=st.dictionaries(st.sampled_from(["a", "color"]), _texts, max_size=2),
    wait_store=st.booleans(),
    size=st.sampled_from([1, 100, 4095, 4096, 5000]),
    bytearray_body=st.booleans(),
    namespace=st.sampled_from([None, "", "ns"]),
    flag=st.sampled_from([0, 7]),
    delay_level=st.sampled_from([0, 3]),
    plain=st.booleans(),
)
def test_prepare_plain_and_general_paths_agree(
    tags: str | None,
    keys: list[str],
    properties: dict[str, str],
    wait_store: bool,
    size: int,
    bytearray_body: bool,
    namespace: str | None,
    flag: int,
    delay_level: int,
    plain: bool,
) -> None:
    # plain messages take a fast path; every message must come out as the general rule says
    if plain:  # half the examples: nothing but a topic and a body
        tags, keys, properties, wait_store, delay_level = None, [], {}, True, 0
    body = b"z" * size
    sent: bytes = bytearray(body) if bytearray_body else body  # type: ignore[assignment]
    msg = Message(topic="T", body=sent, tags=tags,
                  keys=keys, properties=properties, wait_store=wait_store, flag=flag,
                  delay_level=delay_level)  # fmt: skip
    got = prepare(msg, ids=UniqueIdGenerator(), namespace=namespace, max_size=4 << 20,
                  compress_threshold=4096, compress_level=5)  # fmt: skip
    expected_props = encode_properties({**msg.wire_properties(), Property.UNIQ_KEY: got.msg_id})
    assert got.properties == expected_props
    compressed = size >= 4096
    assert got.body == (zlib.compress(body, 5) if compressed else body)
    assert got.body.__class__ is bytes
    assert got.sys_flag == (MessageSysFlag.COMPRESSED if compressed else 0)
    assert (got.topic, got.user_topic, got.flag) == ("ns%T" if namespace else "T", "T", flag)
    assert got.batch_ids == ()


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(st.integers(1, 400), st.sampled_from([0, 5]), st.sampled_from([None, "t"])),
        min_size=1,
        max_size=12,
    ),
    max_size=st.integers(450, 2500),
    uniform=st.booleans(),
    odd_one=st.sampled_from([None, "size", "flag", "tags", "wait"]),
)
def test_batch_bodies_are_the_reference_encoding(
    shapes: list[tuple[int, int, str | None]],
    max_size: int,
    uniform: bool,
    odd_one: str | None,
) -> None:
    # every record encoded as encode_batch does, chunks cut where the size limit says
    if uniform:  # half the examples: one plain shape throughout (the one-head path), and at
        # times one message that differs, last (the general loop must take over)
        shapes = [(shapes[0][0], shapes[0][1], None)] * len(shapes)
    messages = [Message(topic="T", body=bytes([65 + i % 26]) * size, flag=flag, tags=tags)
                for i, (size, flag, tags) in enumerate(shapes)]  # fmt: skip
    if uniform and odd_one is not None and len(messages) > 1:
        last = messages[-1]
        messages[-1] = {
            "size": attrs.evolve(last, body=last.body + b"+"),
            "flag": attrs.evolve(last, flag=last.flag + 1),
            "tags": attrs.evolve(last, tags="odd"),
            "wait": attrs.evolve(last, wait_store=False),
        }[odd_one]
        if odd_one == "wait":  # (or an earlier message too big for any chunk)
            with pytest.raises(InvalidMessage, match=r"wait_store|encodes to"):
                prepare_batch(messages, ids=UniqueIdGenerator(), namespace=None,
                              max_size=max_size)  # fmt: skip
            return
    any_id = UniqueIdGenerator().next_id()  # (every id has this length)
    records = [22 + len(m.body) + len(encode_properties({**m.wire_properties(),
               Property.UNIQ_KEY: any_id}).encode()) for m in messages]  # fmt: skip
    if max(records) > max_size:  # a message that fits in no chunk is refused, never sent
        first = next(i for i, r in enumerate(records) if r > max_size)
        with pytest.raises(InvalidMessage, match=f"message {first} "):
            prepare_batch(messages, ids=UniqueIdGenerator(), namespace=None, max_size=max_size)
        return
    chunks = prepare_batch(messages, ids=UniqueIdGenerator(), namespace=None, max_size=max_size)
    ids = [msg_id for chunk in chunks for msg_id in chunk.batch_ids]
    assert len(ids) == len(messages)
    expected: list[list[tuple[bytes, int, str]]] = [[]]
    size = 0
    for msg, msg_id in zip(messages, ids, strict=True):
        props = encode_properties({**msg.wire_properties(), Property.UNIQ_KEY: msg_id})
        record = 22 + len(msg.body) + len(props.encode())
        if expected[-1] and size + record > max_size:
            expected.append([])
            size = 0
        expected[-1].append((msg.body, msg.flag, props))
        size += record
    assert [bytes(c.body) for c in chunks] == [encode_batch(items) for items in expected]
    assert [c.size for c in chunks] == [len(bytes(c.body)) for c in chunks]


def test_ascii_length_is_the_big_endian_16_bit_length() -> None:
    from rocketmq_actors.producer.prepare import _ascii_length
    from rocketmq_actors.protocol.messages import BATCH_PROPS_LENGTH

    for length in (0, 42, 127):
        assert _ascii_length(length).encode() == BATCH_PROPS_LENGTH.pack(length)
    with pytest.raises(ValueError, match="ASCII"):
        _ascii_length(128)
