"""The FastStream example service against the real cluster: HTTP order in, FastStream
handler's decision out through RocketMQ, AsyncAPI document served."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from rocketmq_actors.producer import Producer, create_topic

# once: an example application (the client under it runs on every version)
pytestmark = [pytest.mark.integration, pytest.mark.once]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "faststream_service.py"


def _load(monkeypatch: pytest.MonkeyPatch, namesrv: str, topic: str, group: str) -> ModuleType:
    monkeypatch.setenv("NAMESRV_ADDR", namesrv)
    monkeypatch.setenv("ORDERS_TOPIC", topic)
    monkeypatch.setenv("RESULTS_TOPIC", f"{topic}_results")
    monkeypatch.setenv("GROUP", group)
    monkeypatch.setenv("LIMIT_CENTS", "1000")
    monkeypatch.setenv("CONSUME_FROM", "FIRST_OFFSET")
    spec = importlib.util.spec_from_file_location("faststream_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # registered first: pydantic resolves the models' string annotations in their module
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


async def test_orders_are_decided_through_rocketmq(
    monkeypatch: pytest.MonkeyPatch, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_faststream_admin") as admin:
        for topic in (unique_topic, f"{unique_topic}_results"):
            await create_topic(admin.instance, topic, queues=2)
    example = _load(monkeypatch, rocketmq_namesrv, unique_topic, unique_group)
    app = example.app
    async with app.router.lifespan_context(app):  # what uvicorn does around the app
        assert await example.router.broker.ping()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            small = await client.post("/orders", json={"order_id": "o-1", "amount_cents": 250})
            big = await client.post("/orders", json={"order_id": "o-2", "amount_cents": 5000})
            bad = await client.post("/orders", json={"order_id": "", "amount_cents": -1})
            assert small.status_code == 202, small.text
            assert big.status_code == 202 and bad.status_code == 422
            first = await client.get("/orders/o-1/decision", params={"wait": 30})
            second = await client.get("/orders/o-2/decision", params={"wait": 30})
            unknown = await client.get("/orders/o-3/decision")
            schema = (await client.get("/asyncapi.json")).json()
    assert example.router.broker.producer is None  # stopped with the app
    assert first.json() == {"order_id": "o-1", "status": "approved", "reason": ""}
    assert second.json()["status"] == "rejected"
    assert unknown.status_code == 404
    assert small.json()["msg_id"] != big.json()["msg_id"]
    channels = schema["channels"]
    assert f"{unique_topic}:Decide" in channels
    assert f"consumer group {unique_group}" in channels[f"{unique_topic}:Decide"]["description"]
