"""A consumer daemon as Kubernetes (or systemd, or Nomad) runs it: probes over HTTP, a graceful
stop on SIGTERM within the pod's grace period. docs/operations.md ("Running in Kubernetes")
shows the deployment around it.

    NAMESRV_ADDR=127.0.0.1:9876 TOPIC=orders GROUP=orders-daemon PORT=8080 \\
        python examples/consumer_daemon.py

- ``GET /livez``: 200 while the event loop answers and the consumer has not stopped; 500 once
  it has failed or stopped (the kubelet then restarts the container).
- ``GET /readyz``: 200 when ``consumer.health().ready``, else 503 with the reasons (the pod
  leaves the service's endpoints, nothing is restarted).
- SIGTERM (what the kubelet sends first) or SIGINT: the consumer stops - handlers in flight
  finish, offsets are committed, the group rebalances its queues to the other pods - within
  ``SHUTDOWN_TIMEOUT`` seconds (keep it under ``terminationGracePeriodSeconds``), then the
  process exits 0. While it runs, offsets are committed every ``PERSIST_INTERVAL`` seconds
  (5).

It prints one JSON line per consumed message (``{"consumed": ...}``) and one when it is up
and when it has stopped. The HTTP server is anyio's own listener and a few lines of HTTP/1.1,
so the example needs nothing beyond the client.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import anyio
from anyio.abc import SocketStream

from rocketmq_actors import ClientOptions, ConsumeFrom, MessageExt, PushConsumer, PushOptions


def say(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def handle(message: MessageExt) -> None:
    say({"consumed": message.body.decode(errors="replace"), "msg_id": message.msg_id})


def probe(consumer: PushConsumer[bytes], path: str) -> tuple[int, dict[str, object]]:
    if path == "/livez":
        alive = consumer.state.value in ("starting", "running")
        return (200 if alive else 500), {"state": consumer.state.value}
    if path == "/readyz":
        health = consumer.health()
        return (200 if health.ready else 503), {"ready": health.ready, "reasons": health.reasons}
    return 404, {"error": f"no such path: {path}"}


async def serve_http(consumer: PushConsumer[bytes], client: SocketStream) -> None:
    async with client:
        with anyio.move_on_after(5):  # a client that sends nothing is dropped
            request = b""
            while b"\r\n\r\n" not in request and len(request) < 8192:
                request += await client.receive()
            _, path, _ = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            status, body = probe(consumer, path)
            payload = json.dumps(body).encode()
            head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                    "Connection: close\r\n\r\n")  # fmt: skip
            await client.send(head.encode() + payload)


async def main() -> None:
    topic, group = os.environ.get("TOPIC", "orders"), os.environ.get("GROUP", "orders-daemon")
    port = int(os.environ.get("PORT", "8080"))
    shutdown_timeout = float(os.environ.get("SHUTDOWN_TIMEOUT", "20"))
    persist_interval = float(os.environ.get("PERSIST_INTERVAL", "5"))
    consumer: PushConsumer[bytes] = PushConsumer(
        group=group,
        subscriptions={topic: "*"},
        handler=handle,
        options=PushOptions(
            consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=persist_interval
        ),
        client=ClientOptions(shutdown_timeout=shutdown_timeout),
    )
    listener = await anyio.create_tcp_listener(local_port=port, local_host="0.0.0.0")
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, lambda client: serve_http(consumer, client))
            async with consumer:  # (the probes answer while it starts: not ready yet)
                say({"up": True, "port": port, "topic": topic, "group": group})
                async for signum in signals:
                    say({"stopping": signal.Signals(signum).name})
                    break
            # the consumer has stopped: committed, its queues released to the other pods
            tg.cancel_scope.cancel()
    await listener.aclose()
    say({"stopped": True})


if __name__ == "__main__":
    anyio.run(main)
