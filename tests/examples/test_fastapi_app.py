"""The FastAPI example against the real cluster: lifespan-held producer, POST publishes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.producer import Producer, create_topic

# once: an example application (the client under it runs on every version)
pytestmark = [pytest.mark.integration, pytest.mark.once]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fastapi_app.py"


def _load(monkeypatch: pytest.MonkeyPatch, namesrv: str, topic: str) -> ModuleType:
    monkeypatch.setenv("ROCKETMQ_NAMESRV", namesrv)
    monkeypatch.setenv("ORDERS_TOPIC", topic)
    spec = importlib.util.spec_from_file_location("fastapi_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_post_publishes_and_bad_orders_are_refused(
    monkeypatch: pytest.MonkeyPatch, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_api_admin") as admin:
        await create_topic(admin.instance, unique_topic, queues=1)
    example = _load(monkeypatch, rocketmq_namesrv, unique_topic)
    app = example.app
    async with app.router.lifespan_context(app):  # what uvicorn does around the app
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            ok = await client.post("/orders", json={"order_id": "o-1", "amount_cents": 250})
            bad = await client.post("/orders", json={"order_id": "", "amount_cents": -1})
        assert app.state.producer.running
    assert not app.state.producer.running  # closed with the app
    assert ok.status_code == 201, ok.text
    assert bad.status_code == 422
    published = ok.json()
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group) as reader:
        (queue,) = await reader.queues(unique_topic)
        result = await reader.pull(queue, published["queue_offset"])
    (message,) = result.messages
    assert message.keys == ["o-1"] and message.msg_id == published["msg_id"]
    assert json.loads(message.body) == {"order_id": "o-1", "amount_cents": 250}


async def test_healthz_is_the_readiness_probe(
    monkeypatch: pytest.MonkeyPatch, rocketmq_namesrv: str, unique_topic: str
) -> None:
    example = _load(monkeypatch, rocketmq_namesrv, unique_topic)
    app = example.app
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        async with app.router.lifespan_context(app):
            ready = await client.get("/healthz")
        stopped = await client.get("/healthz")  # the producer closed with the app
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["ready"] is True and body["state"] == "running" and body["namesrv"]["reachable"]
    assert any(r["topic"] == unique_topic for r in body["routes"])  # (topics=[TOPIC])
    assert stopped.status_code == 503 and stopped.json()["state"] == "stopped"
