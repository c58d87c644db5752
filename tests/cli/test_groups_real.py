"""``group list/describe/reset-offset`` against the real cluster, with the group offline (the
offsets are written) and online (the broker tells the members)."""

from __future__ import annotations

import json

import anyio
import pytest

from rocketmq_actors import admin
from rocketmq_actors.consumer.core.offsets import RemoteOffsetStore
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt

from ._run import acli, aok_json, cli, ok_json, one_line_error

pytestmark = pytest.mark.integration


def _committed(namesrv: str, group: str, topic: str) -> int:
    lag = ok_json("group", "--namesrv", namesrv, "--group", group, "--topic", topic)
    return sum(q["committed"] or 0 for q in lag["queues"])


def _consume(namesrv: str, group: str, topic: str, count: int) -> dict[str, object]:
    result: dict[str, object] = ok_json(
        "consume", "--namesrv", namesrv, "--topic", topic, "--group", group, "--from-first",
        "--count", str(count), "--idle", "5",
    )  # fmt: skip
    return result


def test_reset_offset_of_an_offline_group_then_a_consumer_resumes_there(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, request: pytest.FixtureRequest
) -> None:
    four_nine = str(request.config.getoption("--rocketmq-version")).startswith("4.")
    ns = ("--namesrv", rocketmq_namesrv)
    ok_json("topic", "create", *ns, "--topic", unique_topic, "--queues", "2")
    ok_json("produce", *ns, "--topic", unique_topic, "--count", "10", "--body", "first")
    assert _consume(rocketmq_namesrv, unique_group, unique_topic, 10)["received"] == 10
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 10
    # the stored time of the first message of a second batch: a reset to it skips the first
    ok_json("produce", *ns, "--topic", unique_topic, "--count", "6", "--body", "second")
    peeked = cli("peek", *ns, "--topic", unique_topic, "--from-first", "--count", "50", "--json")
    records = [json.loads(line) for line in peeked.stdout.splitlines()]
    assert len(records) == 16
    times = [r["store_timestamp_ms"] for r in records if r["body"] == "second"]
    firsts = [r["store_timestamp_ms"] for r in records if r["body"] == "first"]
    assert min(times) > max(firsts)  # two CLI processes apart

    reset = ok_json("group", "reset-offset", *ns, "--group", unique_group, "--topic",
                    unique_topic, "--to-earliest")  # fmt: skip
    # 5.x resets server-side, online or not; 4.9 refuses an offline group (CONSUMER_NOT_ONLINE)
    # and the offsets are written with UPDATE_CONSUMER_OFFSET, as mqadmin does
    assert reset["by_broker"] is not four_nine
    assert {(q["broker"], q["queue"], q["offset"]) for q in reset["queues"]} == {
        ("broker-a", 0, 0), ("broker-a", 1, 0)
    }  # fmt: skip
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 0
    again = _consume(rocketmq_namesrv, unique_group, unique_topic, 16)
    assert again["received"] == 16  # every message again, from the start

    ok_json("group", "reset-offset", *ns, "--group", unique_group, "--topic", unique_topic,
            "--to-time", str(min(times)))  # fmt: skip
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 10
    resumed = cli("consume", *ns, "--topic", unique_topic, "--group", unique_group,
                  "--count", "6", "--idle", "5", "--print")  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["second"] * 6

    latest = ok_json("group", "reset-offset", *ns, "--group", unique_group, "--topic",
                     unique_topic, "--to-latest")  # fmt: skip
    assert sum(q["offset"] for q in latest["queues"]) == 16
    describe = ok_json("group", "describe", *ns, "--group", unique_group)
    assert describe["online"] is False and describe["connections"] == []
    assert describe["total_lag"] == 0
    assert {q["topic"] for q in describe["queues"]} >= {unique_topic}


def test_unknown_group_is_exit_status_1(rocketmq_namesrv: str, unique_group: str) -> None:
    proc = cli("group", "describe", "--namesrv", rocketmq_namesrv, "--group", unique_group)
    one_line_error(proc, 1, unique_group)
    assert proc.stdout == ""


async def test_describe_list_and_reset_an_online_group(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Online, the broker moves the members (RESET_CONSUMER_CLIENT_OFFSET): the running
    consumer receives every message again."""
    ns = ("--namesrv", rocketmq_namesrv)
    bodies: list[bytes] = []
    changed = anyio.Event()

    async def handle(message: MessageExt) -> None:
        nonlocal changed
        bodies.append(message.body)
        changed.set()
        changed = anyio.Event()

    async def until(count: int) -> None:
        with anyio.fail_after(30):
            while len(bodies) < count:
                await changed.wait()

    async with Producer(namesrv=rocketmq_namesrv, group="G_cli_groups") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        for i in range(8):
            await producer.send(Message(topic=unique_topic, body=f"m{i}".encode()))
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as push:  # fmt: skip
        await until(8)
        # a 4.9 broker refuses to reset a group with no committed offset ("group not exist"):
        # commit now rather than wait for the 5 s persister. A consume worker settles (moves
        # the queue's offset) right after its handler returns, with no await in between
        # (consumer/push/concurrent.py _worker and _settle), so once no handler runs every
        # offset has moved
        with anyio.fail_after(15):
            await push._group.dispatcher.wait_idle()
        offsets = push._group.offsets
        assert sum(offsets.read(q) or 0 for q in push.assigned()) == 8
        await offsets.persist(push.assigned(), confirmed=True)  # not one-way
        described = await aok_json("group", "describe", *ns, "--group", unique_group,
                                   "--topic", unique_topic)  # fmt: skip
        assert described["online"] is True
        assert [c["language"] for c in described["connections"]] == ["PYTHON"]
        assert described["subscriptions"][unique_topic] == "*"
        assert described["message_model"] == "CLUSTERING"
        assert {q["broker_offset"] for q in described["queues"]} == {4}
        assert {q["consumer_offset"] for q in described["queues"]} == {4}  # committed
        listed = await aok_json("group", "list", *ns)
        assert "broker-a" in listed["groups"][unique_group]["brokers"]
        table = await acli("group", "describe", *ns, "--group", unique_group)
        assert "1 member(s) online" in table.stdout and "total lag:" in table.stdout
        reset = await aok_json("group", "reset-offset", *ns, "--group", unique_group,
                               "--topic", unique_topic, "--to-earliest")  # fmt: skip
        assert reset["by_broker"] is True and {q["offset"] for q in reset["queues"]} == {0}
        await until(16)
    assert sorted(bodies) == sorted([f"m{i}".encode() for i in range(8)] * 2)


def test_group_update_delete_and_producers_as_mqadmin(
    rocketmq_namesrv: str, unique_group: str, request: pytest.FixtureRequest
) -> None:
    orderly = not str(request.config.getoption("--rocketmq-version")).startswith("4.")
    ns = ("--namesrv", rocketmq_namesrv)
    made = ok_json("group", "update", *ns, "--group", unique_group, "--retry-max-times", "2",
                   "--orderly")  # fmt: skip
    assert made["group"] == unique_group and made["brokers"]
    listed = ok_json("group", "list", *ns)["groups"][unique_group]
    assert (listed["retry_max_times"], listed["consume_orderly"]) == (2, orderly)  # (5.x only)
    # (--clean-offset: a 5.5.0 broker lists a group deleted without it still: docs/cli.md)
    deleted = ok_json("group", "delete", *ns, "--group", unique_group, "--clean-offset")
    assert deleted["brokers"] == made["brokers"]
    assert unique_group not in ok_json("group", "list", *ns)["groups"]
    nobody = ok_json("group", "producers", *ns, "--group", unique_group)
    assert nobody["connections"] == []
    one_line_error(cli("group", "update", *ns), 2, "--group")


async def test_group_clone_offset_as_mqadmin(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    source, dest = f"{unique_group}_src", f"{unique_group}_dst"
    ns = ("--namesrv", rocketmq_namesrv)
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_feed") as client:
        await create_topic(client.instance, unique_topic, queues=1)
        (queue,) = (await client.instance.routes.refresh(unique_topic)).subscribe_queues
        for group in (source, dest):  # (a broker refuses offsets of a group it does not know)
            await admin.update_group(client.instance, group)
        committed = RemoteOffsetStore(client.instance, source)
        committed.update(queue, 7)
        await committed.persist(confirmed=True)
    cloned = await aok_json("group", "clone-offset", *ns, "--group", source, "--to-group", dest,
                            "--topic", unique_topic)  # fmt: skip
    assert cloned == {"group": source, "to_group": dest, "topic": unique_topic,
                      "brokers": [queue.broker_name]}  # fmt: skip
    described = await aok_json("group", "describe", *ns, "--group", dest, "--topic", unique_topic)
    assert [q["consumer_offset"] for q in described["queues"]] == [7]
    one_line_error(cli("group", "clone-offset", *ns, "--group", source), 2, "--to-group")


def test_group_set_request_mode_and_request_modes_as_mqadmin(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str, request: pytest.FixtureRequest
) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    argv = ("group", "set-request-mode", *ns, "--group", unique_group, "--topic", unique_topic)
    if str(request.config.getoption("--rocketmq-version")).startswith("4."):
        one_line_error(cli(*argv, "--mode", "POP"), 1, "REQUEST_CODE_NOT_SUPPORTED")
        return
    ok_json("topic", "create", *ns, "--topic", unique_topic)  # (5.x: an unknown one is refused)
    made = ok_json(*argv, "--mode", "POP", "--pop-share-queues", "1")
    assert made["mode"] == "POP" and made["brokers"]
    modes = ok_json("group", "request-modes", *ns)["modes"]
    assert modes[unique_topic][unique_group]["pop_share_queue_num"] == 1
    assert modes[unique_topic][unique_group]["mode"] == "POP"  # (the broker's, not the echo)
    assert modes[unique_topic][unique_group]["brokers"] == made["brokers"]
    one_line_error(cli(*argv), 2, "--mode")
