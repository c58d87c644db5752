"""FastStream's FastAPI integration for RocketMQ, in memory: FastAPI dependencies in a
handler, the broker started by the app's lifespan, the AsyncAPI document served; and the
FastStream app's own AsyncAPI (what ``faststream docs gen`` / ``serve`` read)."""

from __future__ import annotations

from typing import Annotated, Any

import httpx
from fastapi import Depends, FastAPI
from faststream import FastStream

from rocketmq_actors.faststream import RocketMQBroker, TestRocketMQBroker
from rocketmq_actors.faststream.fastapi import RocketMQRouter


def settings() -> dict[str, int]:
    return {"limit": 100}


async def test_fastapi_dependencies_reach_a_handler() -> None:
    router = RocketMQRouter("127.0.0.1:9876")
    seen: list[tuple[int, int]] = []

    @router.subscriber("orders", group="billing")
    @router.publisher("decisions")
    async def decide(
        amount: int, config: Annotated[dict[str, int], Depends(settings)]
    ) -> dict[str, Any]:
        seen.append((amount, config["limit"]))
        return {"approved": amount <= config["limit"]}

    @router.subscriber("decisions", group="audit")
    async def audit(decision: dict[str, Any]) -> None: ...

    app = FastAPI()
    app.include_router(router)

    @app.post("/orders")
    async def post(amount: int) -> dict[str, str]:
        await router.broker.publish(amount, "orders")
        return {"ok": "yes"}

    async with TestRocketMQBroker(router.broker), app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            assert (await client.post("/orders", params={"amount": 150})).status_code == 200
            schema = (await client.get("/asyncapi.json")).json()
        audit.mock.assert_called_once_with({"approved": False})
    assert seen == [(150, 100)]
    assert schema["servers"]["development"]["protocol"] == "rocketmq"
    assert "orders:Decide" in schema["channels"]


async def test_faststream_app_schema_and_asgi_docs() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("orders", group="billing", tags="paid || refunded")
    async def bill(amount: int) -> None: ...

    app = FastStream(broker)
    schema = app.schema.to_specification().to_jsonable()  # what `faststream docs gen` writes
    assert "TAG paid || refunded" in schema["channels"]["orders:Bill"]["description"]
    asgi = app.as_asgi(asyncapi_path="/docs")  # what `faststream docs serve` serves
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=asgi), base_url="http://docs"
    ) as client:
        page = await client.get("/docs")
    assert page.status_code == 200 and "orders:Bill" in page.text
