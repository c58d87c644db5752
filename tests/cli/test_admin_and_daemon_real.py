"""CLI: route/topic/group against the real cluster, and consume --handler as a daemon."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rocketmq_actors.cli import main

pytestmark = pytest.mark.integration


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketmq_actors", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)  # fmt: skip


def test_topic_create_list_route_and_group_lag(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    created = _cli("topic", "create", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                   "--queues", "3", "--json")  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["queues"] == 3
    listed = _cli("topic", "list", "--namesrv", rocketmq_namesrv, "--json")
    assert unique_topic in json.loads(listed.stdout)["topics"]
    route = json.loads(_cli("route", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                            "--json").stdout)  # fmt: skip
    assert route["brokers"] == {"broker-a": route["brokers"]["broker-a"]}
    assert len(route["read_queues"]) == 3
    produced = _cli("produce", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                    "--count", "30", "--json")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = _cli("consume", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                    "--group", unique_group, "--from-first", "--count", "10", "--json")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    group = json.loads(_cli("group", "--namesrv", rocketmq_namesrv, "--group", unique_group,
                            "--topic", unique_topic, "--json").stdout)  # fmt: skip
    assert sum(q["max"] for q in group["queues"]) == 30
    committed = sum(q["committed"] or 0 for q in group["queues"])
    assert committed == 10 and group["total_lag"] == 30 - committed
    table = _cli("group", "--namesrv", rocketmq_namesrv, "--group", unique_group,
                 "--topic", unique_topic)  # fmt: skip
    assert "total lag:" in table.stdout


def test_consume_handler_daemon_runs_user_code_and_stops_on_sigterm(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, tmp_path: Path
) -> None:
    (tmp_path / "myhandlers.py").write_text(
        textwrap.dedent("""
        import sys

        async def record(message):
            sys.stderr.write("handled " + message.msg_id + "\\n")
            sys.stderr.flush()
    """)
    )
    produced = _cli("produce", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                    "--count", "25", "--json")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_actors", "consume", "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--group", unique_group, "--from-first", "--follow", "--json",
         "--handler", "myhandlers:record"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    watchdog = threading.Timer(90, proc.kill)  # a hung daemon ends the read loop below
    watchdog.start()
    try:
        assert proc.stderr is not None
        handled = set()
        for line in proc.stderr:  # the user's handler reports each message on stderr
            if line.startswith("handled "):
                handled.add(line.split()[1])
                if len(handled) == 25:
                    break
        assert len(handled) == 25, f"the daemon stopped after {len(handled)} messages"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["unique"] == 25
    group = json.loads(_cli("group", "--namesrv", rocketmq_namesrv, "--group", unique_group,
                            "--topic", unique_topic, "--json").stdout)  # fmt: skip
    assert group["total_lag"] == 0  # offsets were committed on the way out


@pytest.mark.parametrize(
    ("spec", "message"),
    [("nomodule_xyz:f", "cannot import"), ("json:nothing_here", "has no"), ("json", "expected")],
)
def test_a_bad_handler_is_a_one_line_error(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["consume", "--namesrv", "127.0.0.1:9", "--topic", "T", "--group", "G",
                   "--handler", spec])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_bench_produces_then_consumes(rocketmq_namesrv: str, unique_topic: str) -> None:
    done = _cli("bench", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--count",
                "3000", "--size", "512", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["sent"] == 3000 and figures["failed"] == 0 and figures["received"] == 3000
    assert figures["produce_msgs_per_s"] > 0 and figures["send_p99_ms"] >= figures["send_p50_ms"]


async def test_tree_prints_each_online_members_actor_tree(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """``rocketmq-actors tree`` asks the broker for each member's running info (307), where
    a rocketmq-actors member puts its live tree."""
    import anyio

    from rocketmq_actors.consumer.pull import PullConsumer
    from rocketmq_actors.consumer.push import PushConsumer
    from rocketmq_actors.producer import Producer, create_topic
    from rocketmq_actors.protocol.records import MessageExt

    async def handle(message: MessageExt) -> None:
        pass

    async with Producer(namesrv=rocketmq_namesrv, group="G_tree_admin") as admin:
        await create_topic(admin.instance, unique_topic, queues=2)
    async with (
        PushConsumer(namesrv=rocketmq_namesrv, group=unique_group,
                     subscriptions={unique_topic: "*"}, handler=handle) as push,
        PullConsumer(group=unique_group, topics=[unique_topic], namesrv=rocketmq_namesrv) as pull,
    ):  # fmt: skip
        args = ["tree", "--namesrv", rocketmq_namesrv, "--group", unique_group,
                "--topic", unique_topic]  # fmt: skip
        shown = await anyio.to_thread.run_sync(functools.partial(_cli, *args, "--json"))
        assert shown.returncode == 0, shown.stderr
        clients = json.loads(shown.stdout)["clients"]
        assert set(clients) == {push.instance.client_id, pull.instance.client_id}
        kinds = {tree["kind"] for tree in clients.values()}
        assert kinds == {"push-consumer", "pull-consumer"}
        table = await anyio.to_thread.run_sync(functools.partial(_cli, *args))
    assert "rebalancer" in table.stdout and "queue[" in table.stdout
    assert "fetcher[" in table.stdout
