"""An order service on FastStream and RocketMQ: a FastStream handler consumes orders and
publishes a decision for each, and a FastAPI app takes orders over HTTP and answers with the
decision - one RocketMQ broker (``router.broker``) for both, started and stopped by the app's
lifespan.

    NAMESRV_ADDR=127.0.0.1:9876 uvicorn examples.faststream_service:app

* ``POST /orders`` with ``{"order_id": "o-1", "amount_cents": 1234}`` publishes the order to
  ``ORDERS_TOPIC`` (key: the order id, tag ``new``) and answers 202 with its message id; a bad
  order is refused with 422 before anything is sent.
* ``decide`` (consumer group ``GROUP``) consumes the orders: approved up to
  ``LIMIT_CENTS``, else rejected; its result goes to ``RESULTS_TOPIC`` (tag ``decision``). A
  handler that raises is consumed again later (FastStream's ``NACK_ON_ERROR``, RocketMQ's
  reconsume later), then lands in ``%DLQ%<GROUP>``.
* ``remember`` (group ``GROUP_results``) consumes the decisions into memory, and
  ``GET /orders/{order_id}/decision?wait=5`` answers with one, waiting up to ``wait`` seconds
  for it to arrive (404 if it does not).
* ``GET /asyncapi`` shows the AsyncAPI document of the topics (``/asyncapi.json``: the JSON).
"""

from __future__ import annotations

import os
from typing import Literal

import anyio
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from rocketmq_actors.faststream.fastapi import RocketMQRouter

ORDERS_TOPIC = os.environ.get("ORDERS_TOPIC", "orders")
RESULTS_TOPIC = os.environ.get("RESULTS_TOPIC", "order_decisions")
GROUP = os.environ.get("GROUP", "order_decider")
LIMIT_CENTS = int(os.environ.get("LIMIT_CENTS", "100000"))
#: where consumers start when their group is new (FIRST_OFFSET: orders sent before it started)
START = os.environ.get("CONSUME_FROM", "LAST_OFFSET")


class Order(BaseModel):
    order_id: str = Field(min_length=1, max_length=64)
    amount_cents: int = Field(gt=0)


class Decision(BaseModel):
    order_id: str
    status: Literal["approved", "rejected"]
    reason: str = ""


class Accepted(BaseModel):
    order_id: str
    msg_id: str


class Decisions:
    """The decisions seen so far, and a way to wait for one."""

    def __init__(self) -> None:
        self.known: dict[str, Decision] = {}
        self._arrived: dict[str, anyio.Event] = {}

    def add(self, decision: Decision) -> None:
        self.known[decision.order_id] = decision
        self._arrived.pop(decision.order_id, anyio.Event()).set()

    async def wait(self, order_id: str, timeout: float) -> Decision | None:
        if order_id not in self.known:
            event = self._arrived.setdefault(order_id, anyio.Event())
            with anyio.move_on_after(timeout):
                await event.wait()
        return self.known.get(order_id)


def consumer_options() -> dict[str, object]:
    from rocketmq_actors import ConsumeFrom

    return {"consume_from": ConsumeFrom[START]}


router = RocketMQRouter(producer_group=f"{GROUP}_api", description="orders and decisions")
decisions = Decisions()


@router.subscriber(ORDERS_TOPIC, group=GROUP, tags="new", consumer_options=consumer_options())
@router.publisher(RESULTS_TOPIC, tags="decision")
async def decide(order: Order) -> Decision:
    """Approve an order up to the limit."""
    if order.amount_cents > LIMIT_CENTS:
        return Decision(order_id=order.order_id, status="rejected", reason="over the limit")
    return Decision(order_id=order.order_id, status="approved")


@router.subscriber(RESULTS_TOPIC, group=f"{GROUP}_results", consumer_options=consumer_options())
async def remember(decision: Decision) -> None:
    """Keep the decisions for the HTTP endpoint."""
    decisions.add(decision)


app = FastAPI(title="orders")
app.include_router(router)


@app.post("/orders", status_code=202)
async def take_order(order: Order) -> Accepted:
    result = await router.broker.publish(order, ORDERS_TOPIC, keys=order.order_id, tags="new")
    return Accepted(order_id=order.order_id, msg_id=result.msg_id)


@app.get("/orders/{order_id}/decision")
async def decision_of(order_id: str, wait: float = 0.0) -> Decision:
    decision = await decisions.wait(order_id, min(max(wait, 0.0), 30.0))
    if decision is None:
        raise HTTPException(status_code=404, detail="no decision yet")
    return decision
