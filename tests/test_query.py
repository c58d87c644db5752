"""query.py without a broker: the requests it sends (the header fields of Java's
QueryMessageRequestHeader / ViewMessageRequestHeader), how replies are merged and filtered,
and bad input refused before any I/O."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest

from rocketmq_actors import query
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import BrokerError, ConfigError
from rocketmq_actors.protocol.bodies import BrokerData, TopicRouteData
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.messages import offset_msg_id
from rocketmq_actors.testing.stored import encode_stored

A, B = "10.0.0.1:10911", "10.0.0.2:10911"
UNIQ = "0A00C07AC3B718B4AAC230B977520000"


class FakeNamesrv:
    async def topic_route(self, topic: str) -> TopicRouteData:
        return TopicRouteData(
            queue_datas=(),
            broker_datas=(
                BrokerData(cluster="c", broker_name="broker-a", broker_addrs={0: A}),
                BrokerData(cluster="c", broker_name="broker-b", broker_addrs={1: B}),  # slave
            ),
        )


class FakeInstance:
    request_timeout = 3.0

    def __init__(self, replies: dict[str, RemotingCommand]) -> None:
        self.namesrv = FakeNamesrv()
        self.replies = replies
        self.sent: list[tuple[str, RemotingCommand]] = []

    async def request(
        self, addr: str, cmd: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        self.sent.append((addr, cmd))
        return self.replies[addr]


def _reply(code: int, **kwargs: Any) -> RemotingCommand:
    return RemotingCommand.request(0).response(code, **kwargs)


def _found(*records: bytes) -> RemotingCommand:
    ext = {"indexLastUpdateTimestamp": "1700000000500", "indexLastUpdatePhyoffset": "99"}
    return _reply(ResponseCode.SUCCESS, ext_fields=ext, body=b"".join(records))


def _run(coro: Any) -> Any:
    async def main() -> Any:
        return await coro

    return anyio.run(main)


def test_query_by_key_asks_every_broker_and_keeps_only_the_key_and_topic() -> None:
    hit = encode_stored(topic="T", body=b"1", properties={"KEYS": "k1 k2"}, commit_log_offset=10,
                        store_host=A)  # fmt: skip
    # the index is a hash: a collision of another key, or of the same key in another topic
    other_key = encode_stored(topic="T", body=b"2", properties={"KEYS": "k3"}, store_host=A)
    other_topic = encode_stored(topic="U", body=b"3", properties={"KEYS": "k1"}, store_host=A)
    on_b = encode_stored(topic="T", body=b"4", properties={"KEYS": "k1"}, store_host=B,
                         store_timestamp=1_600_000_000_000)  # fmt: skip
    fake = FakeInstance({A: _found(hit, other_key, other_topic, hit), B: _found(on_b)})
    result = _run(query.query_messages(cast(ClientInstance, fake), "T", "k1", max_num=5,
                                       begin_ms=100, end_ms=200))  # fmt: skip
    assert [m.body for m in result.messages] == [b"4", b"1"]  # oldest first, no duplicate
    assert result.index_last_update_ms == 1_700_000_000_000 + 500
    assert sorted(addr for addr, _ in fake.sent) == [A, B]  # the slave when no master
    cmd = fake.sent[0][1]
    assert cmd.code == 12  # RequestCode.QUERY_MESSAGE
    assert cmd.ext_fields == {
        "topic": "T", "key": "k1", "maxNum": "5", "beginTimestamp": "100",
        "endTimestamp": "200", "_UNIQUE_KEY_QUERY": "false",
    }  # fmt: skip


def test_query_by_unique_key_sets_the_flag_and_matches_the_id() -> None:
    mine = encode_stored(topic="T", body=b"mine", properties={"UNIQ_KEY": UNIQ})
    collision = encode_stored(topic="T", body=b"x", properties={"UNIQ_KEY": "0" * 32})
    not_found = _reply(ResponseCode.QUERY_NOT_FOUND, remark="can not find")
    fake = FakeInstance({A: _found(collision, mine), B: not_found})
    found = _run(query.query_by_unique_key(cast(ClientInstance, fake), "T", UNIQ, begin_ms=0))
    assert found is not None and found.body == b"mine"
    ext = fake.sent[0][1].ext_fields
    assert ext["_UNIQUE_KEY_QUERY"] == "true" and ext["key"] == UNIQ and ext["maxNum"] == "32"


def test_every_broker_failing_raises_one_failing_is_reported() -> None:
    refused = _reply(ResponseCode.SYSTEM_ERROR, remark="boom")
    fake = FakeInstance({A: refused, B: refused})
    with pytest.raises(BrokerError):
        _run(query.query_messages(cast(ClientInstance, fake), "T", "k"))
    ok = encode_stored(topic="T", body=b"1", properties={"KEYS": "k"})
    fake = FakeInstance({A: refused, B: _found(ok)})
    result = _run(query.query_messages(cast(ClientInstance, fake), "T", "k"))
    assert [m.body for m in result.messages] == [b"1"] and list(result.failed) == ["broker-a"]


def test_view_sends_the_offset_to_the_store_host_of_the_id() -> None:
    stored = encode_stored(topic="T", body=b"v", commit_log_offset=4096, store_host=A)
    fake = FakeInstance({A: _found(stored)})
    msg_id = offset_msg_id(bytes([10, 0, 0, 1]), 10911, 4096)
    message = _run(query.view_message(cast(ClientInstance, fake), msg_id, topic="T"))
    assert message.body == b"v"
    addr, cmd = fake.sent[0]
    assert addr == A and cmd.code == 33  # RequestCode.VIEW_MESSAGE_BY_ID
    assert cmd.ext_fields == {"offset": "4096", "topic": "T"}
    with pytest.raises(query.MessageNotFound):  # another topic's message: as Java, not found
        _run(query.view_message(cast(ClientInstance, fake), msg_id, topic="U"))
    gone = _reply(ResponseCode.SYSTEM_ERROR, remark="can not find message by the offset, 4096")
    with pytest.raises(query.MessageNotFound):
        _run(query.view_message(cast(ClientInstance, FakeInstance({A: gone})), msg_id))


def test_find_message_queries_a_unique_key_in_the_topic() -> None:
    mine = encode_stored(topic="T", body=b"mine", properties={"UNIQ_KEY": UNIQ})
    fake = FakeInstance({A: _found(mine), B: _found()})
    found = _run(query.find_message(cast(ClientInstance, fake), UNIQ.lower(), topic="T"))
    assert found.body == b"mine"
    with pytest.raises(ConfigError, match="topic"):
        _run(query.find_message(cast(ClientInstance, fake), UNIQ))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"topic": "", "key": "k"}, "topic"),
        ({"topic": "T", "key": " "}, "key"),
        ({"topic": "T", "key": "k", "max_num": 0}, "max_num"),
        ({"topic": "T", "key": "k", "begin_ms": -1}, "begin_ms"),
        ({"topic": "T", "key": "k", "begin_ms": 5, "end_ms": 4}, "begin_ms"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(kwargs: dict[str, Any], field: str) -> None:
    fake = FakeInstance({})
    with pytest.raises(ConfigError, match=field):
        _run(query.query_messages(cast(ClientInstance, fake), **kwargs))
    assert fake.sent == []


def test_bad_ids_are_a_typed_error() -> None:
    fake = FakeInstance({})
    with pytest.raises(query.InvalidMessageId, match="msg_id"):
        _run(query.view_message(cast(ClientInstance, fake), "not-an-id"))
    with pytest.raises(query.InvalidMessageId, match="unique key"):
        _run(query.view_message(cast(ClientInstance, fake), UNIQ))
    assert fake.sent == []


def test_the_admin_module_offers_the_query_functions() -> None:
    from rocketmq_actors import admin

    for name in ("query_messages", "query_by_unique_key", "view_message", "find_message",
                 "decode_message_id"):  # fmt: skip
        assert getattr(admin, name) is getattr(query, name) and name in admin.__all__
