from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound, Router
from rocketmq_actors.testing.stored import encode_stored


class FakeConn:
    """Records replies; stands in for BrokerConnection where only send_response matters."""

    addr = "127.0.0.1:1"

    def __init__(self) -> None:
        self.replies: list[RemotingCommand] = []

    def send_response(self, cmd: RemotingCommand) -> None:
        self.replies.append(cmd)


def _request(code: int, body: bytes = b"", oneway: bool = False, **ext: str) -> RemotingCommand:
    cmd = RemotingCommand.request(code, ext, body, oneway=oneway)
    cmd.opaque = 42
    return cmd


def _dispatch(router: Router, cmd: RemotingCommand) -> FakeConn:
    conn = FakeConn()
    router.dispatch(conn, cmd)  # type: ignore[arg-type]
    return conn


def test_transaction_check_goes_to_the_producer_of_its_pgroup() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("p")
    router.register_producer("pg-1", box)
    body = encode_stored(topic="t", body=b"x", properties={"PGROUP": "pg-1", "TRAN_MSG": "true"})
    _dispatch(router, _request(RequestCode.CHECK_TRANSACTION_STATE, body, oneway=True))
    assert box.statistics().queued == 1


@pytest.mark.parametrize(
    ("code", "field"),
    [
        (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, "consumerGroup"),
        (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, "group"),
        (RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, "group"),
        (RequestCode.GET_CONSUMER_RUNNING_INFO, "consumerGroup"),
        (RequestCode.CONSUME_MESSAGE_DIRECTLY, "consumerGroup"),
    ],
)
async def test_consumer_requests_go_to_the_consumer_of_their_group(code: int, field: str) -> None:
    router = Router()
    mine: Mailbox[Inbound] = Mailbox("mine")
    other: Mailbox[Inbound] = Mailbox("other")
    router.register_consumer("cg", mine)
    router.register_consumer("cg-other", other)
    ext: dict[str, Any] = {field: "cg"}
    conn = _dispatch(router, _request(code, **ext))
    assert (mine.statistics().queued, other.statistics().queued) == (1, 0)
    inbound = await mine.receive()
    inbound.reply(ResponseCode.SUCCESS, body=b"{}")
    assert [(r.code, r.opaque, r.is_response) for r in conn.replies] == [(0, 42, True)]


def test_unknown_code_is_answered_not_supported() -> None:
    conn = _dispatch(Router(), _request(4242))
    assert [r.code for r in conn.replies] == [ResponseCode.REQUEST_CODE_NOT_SUPPORTED]


def test_oneway_requests_are_never_answered() -> None:
    conn = _dispatch(Router(), _request(4242, oneway=True))
    assert conn.replies == []


def test_no_owner_is_a_system_error_for_two_way_requests() -> None:
    conn = _dispatch(Router(), _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="x"))
    assert conn.replies[0].code == ResponseCode.SYSTEM_ERROR and "x" in (
        conn.replies[0].remark or ""
    )


def test_full_mailbox_is_answered_busy_and_never_blocks() -> None:
    router = Router()
    box: Mailbox[Inbound] = Mailbox("c", capacity=1)
    router.register_consumer("cg", box)
    _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="cg"))
    conn = _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="cg"))
    assert conn.replies[0].code == ResponseCode.SYSTEM_BUSY
    assert router.undeliverable == 1


def test_bad_check_body_is_dropped() -> None:
    router = Router()
    conn = _dispatch(
        router, _request(RequestCode.CHECK_TRANSACTION_STATE, b"\x00garbage", oneway=True)
    )
    assert conn.replies == [] and router.undeliverable == 1


def test_closed_mailbox_is_answered_busy_not_raised() -> None:
    """A request racing its owner's shutdown must not raise into the connection's reader."""
    router = Router()
    box: Mailbox[Inbound] = Mailbox("c")
    router.register_consumer("cg", box)
    box.close()
    conn = _dispatch(router, _request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="cg"))
    assert conn.replies[0].code == ResponseCode.SYSTEM_BUSY
