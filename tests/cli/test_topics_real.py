"""``topic create/update/delete/route/status``, ``cluster list`` and ``broker status`` against
the real cluster."""

from __future__ import annotations

import time

import pytest

from ._run import cli, ok_json, one_line_error

pytestmark = pytest.mark.integration


def test_topic_create_update_status_and_delete(rocketmq_namesrv: str, unique_topic: str) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    created = ok_json("topic", "create", *ns, "--topic", unique_topic, "--read-queues", "2",
                      "--write-queues", "3", "--perm", "r")  # fmt: skip
    assert created["brokers"] == ["broker-a"] and created["perm"] == 4
    route = ok_json("topic", "route", *ns, "--topic", unique_topic)
    # read-only: no queue to write to; two to read
    assert len(route["read_queues"]) == 2 and route["write_queues"] == []
    updated = ok_json("topic", "update", *ns, "--topic", unique_topic, "--queues", "4",
                      "--perm", "rw")  # fmt: skip
    assert updated["queues"] == 4 and updated["perm"] == 6
    assert updated["before"] == {
        "broker-a": {"read_queues": 2, "write_queues": 3, "perm": 4, "order": False}
    }
    route = ok_json("route", *ns, "--topic", unique_topic)  # the top-level alias
    assert len(route["read_queues"]) == 4 and len(route["write_queues"]) == 4
    ok_json("produce", *ns, "--topic", unique_topic, "--count", "20")
    status = ok_json("topic", "status", *ns, "--topic", unique_topic)
    assert [(q["broker"], q["queue"]) for q in status["queues"]] == [
        ("broker-a", i) for i in range(4)
    ]
    assert sum(q["max"] for q in status["queues"]) == 20 and status["messages"] == 20
    assert all(q["min"] == 0 for q in status["queues"])
    table = cli("topic", "status", *ns, "--topic", unique_topic)
    assert table.returncode == 0 and "messages kept: 20" in table.stdout
    deleted = ok_json("topic", "delete", *ns, "--topic", unique_topic)
    assert deleted["brokers"] == ["broker-a"] and deleted["namesrvs"] == [rocketmq_namesrv]
    assert unique_topic not in ok_json("topic", "list", *ns)["topics"]
    one_line_error(cli("topic", "status", *ns, "--topic", unique_topic), 1, unique_topic)


def test_update_changes_only_what_is_given(
    rocketmq_namesrv: str, unique_topic: str, request: pytest.FixtureRequest
) -> None:
    four_nine = str(request.config.getoption("--rocketmq-version")).startswith("4.")
    ns = ("--namesrv", rocketmq_namesrv, "--topic", unique_topic)
    ok_json("topic", "create", *ns, "--queues", "8", "--order")
    # read-only: the 8 read and write queues and the order flag stay as they are
    updated = ok_json("topic", "update", *ns, "--perm", "4")
    # (a 4.9 broker ignores the header's order flag: mqadmin keeps 4.x order in the NameServer)
    assert (updated["read_queues"], updated["write_queues"], updated["perm"]) == (8, 8, 4)
    assert updated["order"] is not four_nine
    route = ok_json("topic", "route", *ns)
    assert len(route["read_queues"]) == 8 and route["write_queues"] == []
    # fewer read queues would strand queues 4-7's messages: refused, nothing changed
    one_line_error(cli("topic", "update", *ns, "--queues", "4"), 1, "--force", "4-7")
    one_line_error(cli("topic", "update", *ns, "--write-queues", "9"), 1, "--force")
    assert len(ok_json("topic", "route", *ns)["read_queues"]) == 8
    # shrinking the write queues first is the safe order: allowed
    shrunk = ok_json("topic", "update", *ns, "--write-queues", "4", "--perm", "rw")
    assert (shrunk["read_queues"], shrunk["write_queues"], shrunk["perm"]) == (8, 4, 6)
    forced = ok_json("topic", "update", *ns, "--queues", "4", "--force")
    assert forced["queues"] == 4 and forced["before"]["broker-a"]["read_queues"] == 8
    route = ok_json("topic", "route", *ns)
    assert len(route["read_queues"]) == 4 and len(route["write_queues"]) == 4


def test_update_of_an_unknown_topic_is_exit_status_1(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    proc = cli("topic", "update", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
               "--perm", "r")  # fmt: skip
    one_line_error(proc, 1, unique_topic)


def test_unknown_topic_is_exit_status_1(rocketmq_namesrv: str, unique_topic: str) -> None:
    for action in ("status", "route", "delete"):
        proc = cli("topic", action, "--namesrv", rocketmq_namesrv, "--topic", unique_topic)
        one_line_error(proc, 1, unique_topic)
        assert proc.stdout == ""


def test_cluster_list_and_broker_status(rocketmq_namesrv: str) -> None:
    # a broker fails its runtime info in its first second (no stats sample yet): wait for it
    deadline = time.monotonic() + 15
    while True:
        listed = ok_json("cluster", "list", "--namesrv", rocketmq_namesrv)["brokers"]
        if all(b["error"] is None for b in listed) or time.monotonic() > deadline:
            break
    masters = [b for b in listed if b["id"] == 0]
    assert [b["broker"] for b in masters][:1] == ["broker-a"]
    assert all(b["reachable"] for b in listed)
    assert all(b["version"].startswith("V") and b["error"] is None for b in listed)
    table = cli("cluster", "list", "--namesrv", rocketmq_namesrv)
    assert table.returncode == 0 and masters[0]["addr"] in table.stdout
    status = ok_json("broker", "status", "--namesrv", rocketmq_namesrv, "--broker", "broker-a")
    runtime = status["brokers"]["broker-a"]["runtime"]
    assert status["brokers"]["broker-a"]["addr"] == masters[0]["addr"]
    assert runtime["brokerVersionDesc"] == masters[0]["version"]
    assert "putTps" in runtime and "msgPutTotalTodayNow" in runtime
    by_addr = ok_json("broker", "status", "--namesrv", rocketmq_namesrv,
                      "--addr", masters[0]["addr"])  # fmt: skip
    assert by_addr["brokers"][masters[0]["addr"]]["runtime"]["brokerVersionDesc"]
    proc = cli("broker", "status", "--namesrv", rocketmq_namesrv, "--broker", "no-such")
    one_line_error(proc, 1, "no-such")


def test_an_unknown_cluster_is_exit_status_1(rocketmq_namesrv: str, unique_topic: str) -> None:
    proc = cli("topic", "create", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
               "--cluster", "NoSuchCluster")  # fmt: skip
    one_line_error(proc, 1, "NoSuchCluster", "DefaultCluster")


def test_broker_config_and_set_config_change_a_running_broker(rocketmq_namesrv: str) -> None:
    ns = ("--namesrv", rocketmq_namesrv)
    shown = ok_json("broker", "config", *ns)["brokers"]
    name, info = next(iter(shown.items()))
    before = info["settings"]["maxMessageSize"]
    changed = str(int(before) - 2)
    try:
        after = ok_json("broker", "set-config", f"maxMessageSize={changed}", *ns,
                        "--broker", name)["brokers"][name]  # fmt: skip
        assert after["settings"]["maxMessageSize"] == changed
    finally:
        ok_json("broker", "set-config", f"maxMessageSize={before}", *ns, "--broker", name)
    one_line_error(cli("broker", "set-config", "no-equals-sign", *ns), 2, "KEY=VALUE")
    one_line_error(cli("broker", "wipe-write-perm", *ns), 2, "--broker")
