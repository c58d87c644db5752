"""How long a consumer waits before pulling again after a failed pull, as the Java 5.3.3
client does: 20 ms after the broker's FLOW_CONTROL (PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_
CONTROL, push and lite pull), otherwise 3 s for a pull consumer
(DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_ON_EXCEPTION) and 1 s for a push consumer
(ClientConfig.pullTimeDelayMillsWhenException, which DefaultMQPushConsumerImpl's constructor
takes). Against a fake broker: the real one cannot be told to answer FLOW_CONTROL."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from tests.slack import slack


class FailingPulls:
    """NameServer and broker in one: every pull is refused, with FLOW_CONTROL ``flow`` times,
    then SYSTEM_ERROR; each pull's arrival time is kept."""

    def __init__(self, flow: int) -> None:
        self.flow = flow
        self.addr = ""
        self.client_id = ""
        self.pulls: list[tuple[float, int]] = []  # (arrival, answer)
        self.enough = anyio.Event()

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            await peer.reply(cmd, body=route_body(("fake", self.addr), queues=1))
        elif cmd.code == RequestCode.HEART_BEAT:  # the group's one member: this client
            self.client_id = json.loads(cmd.body)["clientID"]
            await peer.reply(cmd)
        elif cmd.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            await peer.reply(cmd, body=json.dumps({"consumerIdList": [self.client_id]}).encode())
        elif cmd.code in (RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.GET_MIN_OFFSET,
                          RequestCode.GET_MAX_OFFSET):  # fmt: skip
            await peer.reply(cmd, ext_fields={"offset": "0"})
        elif cmd.code == RequestCode.PULL_MESSAGE:
            if cmd.ext_fields["topic"] != "T":  # a push consumer's %RETRY%G: long-polled
                await anyio.sleep_forever()
            code = ResponseCode.FLOW_CONTROL if len(self.pulls) < self.flow else (
                ResponseCode.SYSTEM_ERROR)  # fmt: skip
            self.pulls.append((anyio.current_time(), code))
            if len(self.pulls) >= self.flow + 3:
                self.enough.set()
            await peer.reply(cmd, code, remark="refused")
        else:
            await peer.reply(cmd)

    def gaps(self) -> tuple[list[float], list[float]]:
        """Seconds before the next pull: after each FLOW_CONTROL, after each other error."""
        after_flow: list[float] = []
        after_error: list[float] = []
        for (t0, code), (t1, _) in zip(self.pulls, self.pulls[1:], strict=False):
            (after_flow if code == ResponseCode.FLOW_CONTROL else after_error).append(t1 - t0)
        return after_flow, after_error


@asynccontextmanager
async def _fake(flow: int) -> AsyncIterator[FailingPulls]:
    fake = FailingPulls(flow)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        yield fake


async def test_pull_consumer_waits_20_ms_after_flow_control_and_3_s_after_an_error() -> None:
    began = time.monotonic()
    async with (
        _fake(flow=5) as fake,
        PullConsumer(
            group="G", namesrv=fake.addr, options=PullOptions(auto_commit=False)
        ) as consumer,  # fmt: skip
    ):
        await consumer.assign([MessageQueue("T", "fake", 0)])
        with anyio.fail_after(20):
            await fake.enough.wait()
    after_flow, after_error = fake.gaps()
    late = slack(began, wakeups=2, floor=0.0)  # (a busy machine's scheduling delay)
    assert len(after_flow) == 5 and max(after_flow) < 0.5 + late  # 20 ms, plus scheduling
    assert len(after_error) >= 2 and all(2.9 <= gap < 4.0 + late for gap in after_error)


async def test_push_consumer_waits_20_ms_after_flow_control_and_1_s_after_an_error() -> None:
    async def handler(message: object) -> None:
        raise AssertionError("no message is ever delivered")

    began = time.monotonic()
    async with (
        _fake(flow=5) as fake,
        PushConsumer(
            group="G",
            subscriptions={"T": "*"},
            handler=handler,
            namesrv=fake.addr,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ),  # fmt: skip
    ):
        with anyio.fail_after(20):
            await fake.enough.wait()
    after_flow, after_error = fake.gaps()
    late = slack(began, wakeups=2, floor=0.0)
    assert len(after_flow) == 5 and max(after_flow) < 0.5 + late
    assert len(after_error) >= 2 and all(0.9 <= gap < 2.0 + late for gap in after_error)
