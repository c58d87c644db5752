"""``message query`` / ``message show`` against the real cluster."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from ._run import cli, ok_json, one_line_error

pytestmark = pytest.mark.integration


def _produced(namesrv: str, topic: str) -> list[dict[str, Any]]:
    ok_json("topic", "create", "--namesrv", namesrv, "--topic", topic, "--queues", "2")
    ok_json("produce", "--namesrv", namesrv, "--topic", topic, "--count", "3", "--body", "q",
            "--key", "cli-key")  # fmt: skip
    peeked = cli("peek", "--namesrv", namesrv, "--topic", topic, "--count", "10", "--json")
    return [json.loads(line) for line in peeked.stdout.splitlines()]


def test_query_by_key_then_show_either_id(rocketmq_namesrv: str, unique_topic: str) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    stored = _produced(rocketmq_namesrv, unique_topic)
    assert len(stored) == 3

    def query() -> Any:
        return ok_json("message", "query", *ns, "--topic", unique_topic, "--key", "cli-key")

    # the broker indexes asynchronously: ask again (each run a process of its own) until all
    # three are found, for at most 30 s
    deadline = time.monotonic() + 30
    result = query()
    while len(result["messages"]) < 3 and time.monotonic() < deadline:
        result = query()
    assert sorted(m["msg_id"] for m in result["messages"]) == sorted(r["msg_id"] for r in stored)
    assert all(m["body"] == "q" and "cli-key" in m["keys"] for m in result["messages"])
    first = result["messages"][0]

    shown = ok_json("message", "show", first["offset_msg_id"], *ns)
    assert shown["id"]["kind"] == "offset"
    assert shown["message"]["msg_id"] == first["msg_id"] and shown["message"]["body"] == "q"
    by_uniq = ok_json("message", "show", first["msg_id"], *ns, "--topic", unique_topic)
    assert by_uniq["id"]["kind"] == "unique"
    assert by_uniq["message"]["offset_msg_id"] == first["offset_msg_id"]
    unique = ok_json("message", "query", *ns, "--topic", unique_topic, "--key", first["msg_id"],
                     "--unique")  # fmt: skip
    assert [m["offset_msg_id"] for m in unique["messages"]] == [first["offset_msg_id"]]

    plain = cli("message", "query", *ns, "--topic", unique_topic, "--key", "cli-key")
    assert plain.returncode == 0 and first["msg_id"] in plain.stdout


def test_not_found_and_unknown_topic_exit_1(rocketmq_namesrv: str, unique_topic: str) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    stored = _produced(rocketmq_namesrv, unique_topic)
    nothing = ok_json("message", "query", *ns, "--topic", unique_topic, "--key", "no-such-key")
    assert nothing["messages"] == []
    one_line_error(cli("message", "query", *ns, "--topic", "no-" + unique_topic, "--key", "k"),
                   1)  # fmt: skip
    # an id of the right form that names a message of another topic
    one_line_error(cli("message", "show", stored[0]["msg_id"], *ns, "--topic",
                       "no-" + unique_topic), 1)  # fmt: skip
