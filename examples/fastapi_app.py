"""A FastAPI service that publishes orders: one Producer for the whole app, opened and closed
by the app's lifespan, shared by every request.

    ROCKETMQ_NAMESRV=127.0.0.1:9876 uvicorn examples.fastapi_app:app

``POST /orders`` with ``{"order_id": "...", "amount_cents": 1234}`` sends one message (key: the
order id) and answers with its message id and queue; a broker that cannot take it gives 503 (the
producer already retried other brokers), a bad order 422. ``GET /healthz`` is the readiness
probe: 200 while the producer is ready (running, a NameServer answers, every route it knows has
a connected master), else 503; the body is ``producer.health().as_dict()`` either way.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from rocketmq_actors import Message, Producer, RocketMQError

TOPIC = os.environ.get("ORDERS_TOPIC", "orders")


class Order(BaseModel):
    order_id: str = Field(min_length=1, max_length=64)
    amount_cents: int = Field(gt=0)


class Published(BaseModel):
    msg_id: str
    queue_id: int
    queue_offset: int


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    namesrv = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
    async with Producer(namesrv=namesrv, group="orders_api", topics=[TOPIC]) as producer:
        app.state.producer = producer
        yield  # closing waits for sends in flight, then unregisters


app = FastAPI(lifespan=lifespan)


@app.post("/orders", status_code=201)
async def publish_order(order: Order, request: Request) -> Published:
    producer: Producer = request.app.state.producer
    message = Message(topic=TOPIC, body=json.dumps(order.model_dump()).encode(),
                      keys=[order.order_id], tags="order")  # fmt: skip
    try:
        result = await producer.send(message)
    except RocketMQError as exc:
        raise HTTPException(status_code=503, detail=f"not published: {exc}") from exc
    return Published(msg_id=result.msg_id, queue_id=result.queue.queue_id,
                     queue_offset=result.queue_offset)  # fmt: skip


@app.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    producer: Producer = request.app.state.producer
    health = producer.health()
    return JSONResponse(health.as_dict(), status_code=200 if health.ready else 503)
