"""The consumer daemon example (the Kubernetes recipe of docs/operations.md) as a process of
its own against the real cluster: probes over HTTP, messages consumed, SIGTERM a graceful stop
that commits and exits 0 within its shutdown timeout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from rocketmq_actors import Message, Producer
from rocketmq_actors.admin import consume_stats
from rocketmq_actors.producer import create_topic
from tests.processes import job_events

# once: an example program (the client under it runs on every version)
pytestmark = [pytest.mark.integration, pytest.mark.once]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "consumer_daemon.py"
SHUTDOWN_TIMEOUT = 10.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _until_ready(base: str, deadline_s: float) -> dict[str, Any]:
    """The probes' answers once ``/readyz`` says ready (polled, as the kubelet does)."""
    async with httpx.AsyncClient(base_url=base) as http:
        with anyio.fail_after(deadline_s):
            while True:
                ready = await http.get("/readyz")
                if ready.status_code == 200:
                    live = await http.get("/livez")
                    unknown = await http.get("/nope")
                    return {"ready": ready.json(), "live": (live.status_code, live.json()),
                            "unknown": unknown.status_code}  # fmt: skip
                assert ready.status_code == 503 and ready.json()["reasons"]
                await anyio.sleep(0.2)


def test_the_daemon_answers_its_probes_consumes_and_stops_on_sigterm(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, tmp_path: Path
) -> None:
    async def feed() -> None:
        async with Producer(namesrv=rocketmq_namesrv, group="G_daemon_feed") as producer:
            await create_topic(producer.instance, unique_topic, queues=2)
            for i in range(3):
                await producer.send(Message(topic=unique_topic, body=f"order {i}".encode()))

    anyio.run(feed)
    port = _free_port()
    env = {
        **os.environ,
        "NAMESRV_ADDR": rocketmq_namesrv,
        "TOPIC": unique_topic,
        "GROUP": unique_group,
        "PORT": str(port),
        "SHUTDOWN_TIMEOUT": str(SHUTDOWN_TIMEOUT),
        "PERSIST_INTERVAL": "3600",  # (no periodic commit: only the stop commits here)
    }
    consumed: list[str] = []

    async def committed() -> int:
        async with Producer(namesrv=rocketmq_namesrv, group="G_daemon_feed") as admin:
            stats = await consume_stats(admin.instance, unique_group, unique_topic)
        return sum(o.consumer_offset for o in stats.offsets.values())

    def up(event: dict[str, Any]) -> bool:  # (messages may be consumed before it is printed)
        if "consumed" in event:
            consumed.append(event["consumed"])
        return event.get("up") is True

    def third(event: dict[str, Any]) -> bool:
        if "consumed" in event:
            consumed.append(event["consumed"])
        return len(consumed) == 3

    with (tmp_path / "stderr").open("w") as errors:
        daemon = subprocess.Popen([sys.executable, str(EXAMPLE)], stdout=subprocess.PIPE,
                                  stderr=errors, text=True, env=env)  # fmt: skip
    try:
        job_events(daemon, up, timeout=60)
        probes = anyio.run(_until_ready, f"http://127.0.0.1:{port}", 60.0)
        if len(consumed) < 3:
            job_events(daemon, third, timeout=60)
        before_stop = anyio.run(committed)
        stopping = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        stopped = job_events(daemon, lambda e: e.get("stopped") is True, timeout=60)
        code = daemon.wait(timeout=30)
        took = time.monotonic() - stopping
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert probes["ready"] == {"ready": True, "reasons": []}
    assert probes["live"] == (200, {"state": "running"}) and probes["unknown"] == 404
    assert sorted(consumed) == [f"order {i}" for i in range(3)]
    assert {"stopping": "SIGTERM"} in stopped, stopped
    assert code == 0, (tmp_path / "stderr").read_text()[-3000:]
    assert took < SHUTDOWN_TIMEOUT + 10  # (a contract: the grace period it was given)

    assert before_stop < 3  # (no periodic commit in the test: what follows is the stop's)
    assert anyio.run(committed) == 3  # the stop committed what was consumed
