from __future__ import annotations

import pytest

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.events import (
    ConsumeDirectly,
    ConsumerIdsChanged,
    ConsumerStatusQuery,
    ResetOffsets,
    RunningInfoQuery,
    TransactionCheck,
)
from rocketmq_actors.protocol.jsonlax import FrozenObject, dumps
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import CONSUMER_EVENTS, PRODUCER_EVENTS, Inbound, Router
from rocketmq_actors.testing.stored import encode_stored


class FakeConn:
    """Records replies; stands in for BrokerConnection where only send_response matters."""

    addr = "127.0.0.1:1"

    def __init__(self) -> None:
        self.replies: list[RemotingCommand] = []

    def send_response(self, cmd: RemotingCommand) -> None:
        self.replies.append(cmd)


def _request(
    code: int,
    body: bytes = b"",
    oneway: bool = False,
    ext: dict[str, str] | None = None,
    **fields: str,
) -> RemotingCommand:
    cmd = RemotingCommand.request(code, {**(ext or {}), **fields}, body, oneway=oneway)
    cmd.opaque = 42
    return cmd


def _dispatch(router: Router, cmd: RemotingCommand) -> FakeConn:
    conn = FakeConn()
    router.dispatch(conn, cmd)  # type: ignore[arg-type]
    return conn


def test_transaction_check_goes_to_the_producer_of_its_pgroup() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("p")
    router.register(PRODUCER_EVENTS, "pg-1", box)
    body = encode_stored(topic="t", body=b"x", properties={"PGROUP": "pg-1", "TRAN_MSG": "true"})
    _dispatch(router, _request(RequestCode.CHECK_TRANSACTION_STATE, body, oneway=True,
                               tranStateTableOffset="5", commitLogOffset="77"))  # fmt: skip
    assert box.statistics().queued == 1
    event = box._receive.receive_nowait().event
    assert isinstance(event, TransactionCheck)  # decoded once, here: the owner gets it typed
    assert event.message.body == b"x" and event.header.commit_log_offset == 77


_TABLE = dumps({"offsetTable": {FrozenObject(MessageQueue("T", "b", 0).to_json()): 9}})
_ONE = encode_stored(topic="T", body=b"direct")
CONSUMER_REQUESTS = [
    (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "cg"}, b"", ConsumerIdsChanged),
    (RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
     {"group": "cg", "topic": "T", "timestamp": "1"}, _TABLE, ResetOffsets),
    (RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"group": "cg", "topic": "T"}, b"",
     ConsumerStatusQuery),
    (RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg", "clientId": "c"}, b"",
     RunningInfoQuery),
    (RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "cg", "brokerName": "b"}, _ONE,
     ConsumeDirectly),
]  # fmt: skip


@pytest.mark.parametrize(("code", "ext", "body", "event"), CONSUMER_REQUESTS)
async def test_consumer_requests_go_to_the_consumer_of_their_group(
    code: int, ext: dict[str, str], body: bytes, event: type[object]
) -> None:
    router = Router()
    mine: Mailbox[Inbound] = Mailbox("mine")
    other: Mailbox[Inbound] = Mailbox("other")
    router.register(CONSUMER_EVENTS, "cg", mine)
    router.register(CONSUMER_EVENTS, "cg-other", other)
    conn = _dispatch(router, _request(code, body, ext=ext))
    assert (mine.statistics().queued, other.statistics().queued) == (1, 0)
    inbound = await mine.receive()
    assert type(inbound.event) is event
    inbound.reply(ResponseCode.SUCCESS, body=b"{}")
    assert [(r.code, r.opaque, r.is_response) for r in conn.replies] == [(0, 42, True)]


def test_reset_and_directly_are_decoded_with_their_bodies() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("cg")
    router.register(CONSUMER_EVENTS, "cg", box)
    for code, ext, body, _ in (CONSUMER_REQUESTS[1], CONSUMER_REQUESTS[4]):
        _dispatch(router, _request(code, body, ext=ext))
    reset = box._receive.receive_nowait().event
    direct = box._receive.receive_nowait().event
    assert isinstance(reset, ResetOffsets) and reset.offsets == {MessageQueue("T", "b", 0): 9}
    assert isinstance(direct, ConsumeDirectly) and direct.message is not None
    assert direct.message.body == b"direct" and direct.message.broker_name == "b"


def test_a_malformed_request_is_answered_system_error_and_counted() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("cg")
    router.register(CONSUMER_EVENTS, "cg", box)
    conn = _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="cg"))
    assert conn.replies[0].code == ResponseCode.SYSTEM_ERROR
    assert "clientId" in (conn.replies[0].remark or "")
    assert router.malformed == 1 and box.statistics().queued == 0


def test_unknown_code_is_answered_not_supported() -> None:
    conn = _dispatch(Router(), _request(4242))
    assert [r.code for r in conn.replies] == [ResponseCode.REQUEST_CODE_NOT_SUPPORTED]


def test_oneway_requests_are_never_answered() -> None:
    conn = _dispatch(Router(), _request(4242, oneway=True))
    assert conn.replies == []


def test_no_owner_is_a_system_error_for_two_way_requests() -> None:
    request = _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="x", clientId="c")
    conn = _dispatch(Router(), request)
    assert conn.replies[0].code == ResponseCode.SYSTEM_ERROR and "x" in (
        conn.replies[0].remark or ""
    )


def test_full_mailbox_is_answered_busy_and_never_blocks() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("c", capacity=1)
    router.register(CONSUMER_EVENTS, "cg", box)
    request = {"consumerGroup": "cg", "clientId": "c"}
    _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, ext=request))
    conn = _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, ext=request))
    assert conn.replies[0].code == ResponseCode.SYSTEM_BUSY
    assert router.undeliverable == 1


def test_bad_check_body_is_dropped() -> None:
    router = Router()
    conn = _dispatch(
        router, _request(RequestCode.CHECK_TRANSACTION_STATE, b"\x00garbage", oneway=True)
    )
    assert conn.replies == [] and router.malformed == 1  # one-way: never answered


def test_closed_mailbox_is_answered_busy_not_raised() -> None:
    """A request racing its owner's shutdown must not raise into the connection's reader."""
    router = Router()
    box: Mailbox[Inbound] = Mailbox("c")
    router.register(CONSUMER_EVENTS, "cg", box)
    box.close()
    request = {"consumerGroup": "cg", "clientId": "c"}
    conn = _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, ext=request))
    assert conn.replies[0].code == ResponseCode.SYSTEM_BUSY
