"""``consume --count`` commits exactly N, ``peek`` reads without a group, ``produce`` body
sources - against the real cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._run import cli, ok_json, one_line_error

# once: the CLI's consume and peek over the client's pull and offsets, tested on every version
pytestmark = [pytest.mark.integration, pytest.mark.once]


def _lag(namesrv: str, group: str, topic: str) -> list[dict[str, object]]:
    result = ok_json("group", "--namesrv", namesrv, "--group", group, "--topic", topic)
    return list(result["queues"])


def _committed(namesrv: str, group: str, topic: str) -> int:
    return sum(int(q["committed"] or 0) for q in _lag(namesrv, group, topic))  # type: ignore[call-overload]


def test_consume_count_commits_exactly_n_with_more_available(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    ok_json("topic", "create", *ns, "--topic", unique_topic, "--queues", "4")
    ok_json("produce", *ns, "--topic", unique_topic, "--count", "60")
    first = ok_json("consume", *ns, "--topic", unique_topic, "--group", unique_group,
                    "--from-first", "--count", "7")  # fmt: skip
    assert first["received"] == 7 and first["unique"] == 7
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 7
    second = ok_json("consume", *ns, "--topic", unique_topic, "--group", unique_group,
                     "--count", "25")  # fmt: skip
    assert second["received"] == 25
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 32
    # the figures agree: the rate is over the stated consuming seconds
    for result in (first, second):
        assert 0 < result["consuming_seconds"] <= result["seconds"]
        rate = result["received"] / result["consuming_seconds"]
        # (msgs_per_s is rounded to one decimal: off by up to half of 0.1, and 0.05 itself is
        # not exact in binary floating point)
        assert result["msgs_per_s"] == pytest.approx(rate, abs=0.05 + 1e-9), result
    # fewer available than asked: stops when idle, commits what it took
    rest = ok_json("consume", *ns, "--topic", unique_topic, "--group", unique_group,
                   "--count", "100", "--idle", "2")  # fmt: skip
    assert rest["received"] == 28
    assert _committed(rocketmq_namesrv, unique_group, unique_topic) == 60
    # the push path (no --count): the rate leaves out the final idle wait
    ok_json("produce", *ns, "--topic", unique_topic, "--count", "5")
    pushed = ok_json("consume", *ns, "--topic", unique_topic, "--group", unique_group,
                     "--idle", "2")  # fmt: skip
    assert pushed["received"] == 5
    assert 0 < pushed["consuming_seconds"] <= pushed["seconds"] - 2
    assert pushed["msgs_per_s"] == round(5 / pushed["consuming_seconds"], 1)


def test_produce_body_key_tag_properties_and_peek_them_without_a_group(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, tmp_path: Path
) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    ok_json("topic", "create", *ns, "--topic", unique_topic, "--queues", "1")
    sent = ok_json("produce", *ns, "--topic", unique_topic, "--body", "hello", "--key", "k1",
                   "--key", "k2", "--tag", "TagA", "--property", "color=red",
                   "--property", "size=XL", "--count", "2")  # fmt: skip
    assert sent["sent"] == 2
    body_file = tmp_path / "body.bin"
    body_file.write_bytes(b"\x00\xffbinary")
    ok_json("produce", *ns, "--topic", unique_topic, "--body-file", str(body_file))
    lines = ok_json("produce", *ns, "--topic", unique_topic, "--stdin", "--tag", "TagB",
                    stdin="one\ntwo\r\nthree\n")  # fmt: skip
    assert lines["sent"] == 3

    peeked = cli("peek", *ns, "--topic", unique_topic, "--from-first", "--count", "10", "--json")
    assert peeked.returncode == 0, peeked.stderr
    records = [json.loads(line) for line in peeked.stdout.splitlines()]
    assert [r["offset"] for r in records] == list(range(6))
    assert [r.get("body") for r in records] == ["hello", "hello", None, "one", "two", "three"]
    assert records[2]["body_base64"] == "AP9iaW5hcnk="
    assert records[0]["keys"] == ["k1", "k2"] and records[0]["tags"] == "TagA"
    assert records[0]["properties"]["color"] == "red"
    assert records[0]["properties"]["size"] == "XL"
    assert {r["tags"] for r in records[3:]} == {"TagB"}
    # a range of one queue, and a tag filter
    ranged = cli("peek", *ns, "--topic", unique_topic, "--queue", "broker-a:0", "--offset", "3",
                 "--count", "2", "--json")  # fmt: skip
    assert [json.loads(line)["body"] for line in ranged.stdout.splitlines()] == ["one", "two"]
    tagged = cli("browse", *ns, "--topic", unique_topic, "--tags", "TagA", "--json")
    assert [json.loads(line)["offset"] for line in tagged.stdout.splitlines()] == [0, 1]
    last = cli("peek", *ns, "--topic", unique_topic, "--from-last", "--count", "1")
    assert last.returncode == 0 and last.stdout.count("\n") == 1 and "three" in last.stdout
    assert "broker-a:0@5" in last.stdout
    # no offset of the topic for the tools group peek pulls in (GET_CONSUME_STATS without a
    # topic lists the topics a group has offsets for), and no group came into being
    tools = ok_json("group", "describe", *ns, "--group", "TOOLS_CONSUMER")
    assert unique_topic not in {q["topic"] for q in tools["queues"]}
    assert unique_group not in ok_json("group", "list", *ns)["groups"]
    missing = cli("peek", *ns, "--topic", unique_topic, "--queue", "broker-a:9")
    one_line_error(missing, 1, "broker-a:9")


def test_peek_from_last_takes_the_last_n_of_every_queue_and_from_a_timestamp(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    """kcat's ``-o -2`` takes the last two of every partition; ``peek --from-last --count 2``
    read queue 0's alone. ``--from-timestamp`` starts each queue at the first message stored
    at or after the time."""
    import time

    ns = ("--namesrv", rocketmq_namesrv)
    ok_json("topic", "create", *ns, "--topic", unique_topic, "--queues", "2")
    for body in ("a1", "a2", "a3"):
        ok_json("produce", *ns, "--topic", unique_topic, "--body", body)
    after_a = int(time.time() * 1000) + 1
    while int(time.time() * 1000) <= after_a:  # (the next store time is after it)
        time.sleep(0.001)
    for body in ("b1", "b2", "b3", "b4", "b5"):
        ok_json("produce", *ns, "--topic", unique_topic, "--body", body)

    def peek(*args: str) -> list[dict[str, Any]]:
        done = cli("peek", *ns, "--topic", unique_topic, "--json", *args)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    stored = peek("--count", "100")
    assert len(stored) == 8 and {r["queue"] for r in stored} == {0, 1}
    last = peek("--from-last", "--count", "2")
    expected = []
    for queue in (0, 1):
        mine = sorted((r for r in stored if r["queue"] == queue), key=lambda r: int(r["offset"]))
        expected += [r["body"] for r in mine[-2:]]
    assert [r["body"] for r in last] == expected  # two of each queue, in queue order
    since = peek("--from-timestamp", str(after_a), "--count", "100")
    assert sorted(r["body"] for r in since) == ["b1", "b2", "b3", "b4", "b5"]
