"""submit's (and send_nowait's) ``callback`` (the Java client's SendCallback): called once with
the send's future as the send ends, whatever the end, against a fake broker that answers sends
only when the test lets it (the real broker cannot be held; tests/producer/test_flush_real.py
has the real one)."""

from __future__ import annotations

import functools

import anyio
import pytest
from structlog.testing import capture_logs

from rocketmq_actors.errors import ClientClosed, ConfigError, SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions, SendFuture
from rocketmq_actors.producer.sendloop import ROUND_ROBIN
from rocketmq_actors.testing.fakeserver import FakeServer

from .fakes import Calls, GatedCluster, on_shared_instance


async def test_each_callback_is_called_once_with_its_future_when_its_send_ends() -> None:
    fake = GatedCluster()
    fake.routes_open.set()
    calls = Calls()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(send_timeout=10)
        ) as producer:
            plain = [
                await producer.submit(Message(topic="T", body=b"p%d" % i), callback=calls)
                for i in range(5)
            ]
            ordered = [  # (through the sender tasks: the ordered lane)
                await producer.submit(
                    Message(topic="T", body=b"o%d" % i), sharding_key="k", callback=calls
                )
                for i in range(2)
            ]
            with anyio.fail_after(5):
                await fake.wait_sends(6)  # the plain five and the first ordered one
            await anyio.wait_all_tasks_blocked()
            assert calls.futures == []  # none has ended
            fake.sends_open.set()
            await calls.until(7)
            assert sorted(map(id, calls.futures)) == sorted(map(id, plain + ordered))
            assert all(calls.done_when_called)
            assert all(f.result().offset_msg_id == "AB" for f in calls.futures)
            await producer.flush()
            await producer.send(Message(topic="T", body=b"after"))
            await anyio.wait_all_tasks_blocked()
            assert len(calls.futures) == 7  # once each, and not for a plain send


async def test_a_stop_calls_back_every_send_it_fails_at_once() -> None:
    """On a shared client instance the connection stays open (another client may use it), so
    no connection loss ends the unanswered sends: the stop's own failure of their futures
    calls back, not a later answer."""
    fake = GatedCluster()
    fake.routes_open.set()
    fake.sends_open.set()  # for the first send (the route known, the connection open)
    calls = Calls()
    async with on_shared_instance(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))
        fake.sends_open = anyio.Event()  # the next sends are never answered
        futures = [
            await producer.submit(Message(topic="T", body=b"s%d" % i), callback=calls)
            for i in range(3)
        ]
        with anyio.fail_after(5):
            await fake.wait_sends(4)  # (the first attempts, from submit)
            await producer.stop()
        await calls.until(3)
        assert sorted(map(id, calls.futures)) == sorted(map(id, futures))
        assert all(calls.done_when_called)
        for future in calls.futures:
            error = future.exception()
            assert isinstance(error, SendFailed) and error.outcome_unknown
        fake.sends_open.set()  # the answers arrive now and release the sends
        with anyio.fail_after(5):
            while producer._group.senders.pending:
                await producer._group.senders.wait_change()
        await anyio.wait_all_tasks_blocked()
        assert len(calls.futures) == 3  # nothing called back twice


async def test_a_raising_callback_is_logged_once_an_interval_and_fails_no_send() -> None:
    fake = GatedCluster()
    fake.routes_open.set()
    fake.sends_open.set()
    calls = Calls()

    def bad(tag: str, future: SendFuture) -> None:
        calls(future)
        raise RuntimeError(f"callback bug {tag}")

    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G") as producer:
            with capture_logs() as logs:
                raising = [
                    await producer.submit(
                        Message(topic="T", body=b"a%d" % i), callback=functools.partial(bad, str(i))
                    )
                    for i in range(3)
                ]
                other = await producer.submit(Message(topic="T", body=b"b"), callback=calls)
                await calls.until(4)
            assert sorted(map(id, calls.futures)) == sorted(map(id, [*raising, other]))
            assert all(calls.done_when_called)
            assert all(f.result().offset_msg_id == "AB" for f in calls.futures)
            errors = [e for e in logs if e["event"] == "producer.send_callback_error"]
            assert len(errors) == 1  # the next two within the interval: counted, not logged
            assert errors[0]["log_level"] == "error" and errors[0]["error"] == "RuntimeError"
            # (the partials count as the function they wrap, named with its module)
            assert errors[0]["callback"] == f"{__name__}.{bad.__qualname__}"
            assert str(errors[0]["exc_info"]).startswith("callback bug")
            assert (await producer.send(Message(topic="T", body=b"c"))).offset_msg_id == "AB"


async def test_a_cancelled_future_is_called_back_once_when_its_send_ends() -> None:
    """A caller that gives up awaiting the future cancels it (asyncio); the send goes on, and
    its callback is called when it ends. A callback that reads ``exception()`` of it (which
    raises CancelledError) is logged as any raising callback, not by the event loop."""
    fake = GatedCluster()
    fake.routes_open.set()
    calls = Calls()

    def naive(future: SendFuture) -> None:
        calls(future)
        future.exception()

    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(send_timeout=10)
        ) as producer:
            with capture_logs() as logs:
                future = await producer.submit(Message(topic="T", body=b"x"), callback=naive)
                with anyio.fail_after(5):
                    await fake.wait_sends(1)
                with anyio.move_on_after(0):  # the caller gives up
                    await future
                assert future.cancelled()
                await anyio.wait_all_tasks_blocked()
                assert calls.futures == []  # the send has not ended
                fake.sends_open.set()
                await calls.until(1)
                await producer.flush()
            assert calls.futures == [future] and calls.done_when_called == [True]
            errors = [e for e in logs if e["event"] == "producer.send_callback_error"]
            assert len(errors) == 1 and errors[0]["error"] == "CancelledError"


async def test_a_callback_that_is_not_callable_is_refused_before_admission() -> None:
    fake = GatedCluster()
    fake.routes_open.set()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G") as producer:
            with pytest.raises(ConfigError, match="callback must be callable, not int"):
                await producer.submit(Message(topic="T", body=b"x"), callback=42)  # type: ignore[arg-type]
            assert producer._group.senders.pending == 0 and fake.sends == 0


async def test_a_refused_admission_never_calls_back() -> None:
    producer = Producer(namesrv="127.0.0.1:1")  # never started: its senders alone
    senders = producer._group.senders
    prepared = producer._group.prepare(Message(topic="T", body=b"x"))
    senders.fail_unsent()  # what the producer's stop does once the sender tasks are gone
    calls = Calls()
    with pytest.raises(ClientClosed):
        await senders.admit(prepared, ROUND_ROBIN, None, lambda: None, callback=calls)
    await anyio.wait_all_tasks_blocked()
    assert calls.futures == []  # the caller got the error: the callback is not told again


class _Hook:
    def before_send(self, context: object) -> None:
        pass

    def after_send(self, context: object) -> None:
        pass


async def test_a_raising_callback_behind_a_send_hook_is_logged_under_its_own_name() -> None:
    """With hooks, the send's callback is wrapped (after_send first): a failing one is still
    named as the application wrote it, not as the wrapper."""
    fake = GatedCluster()
    fake.routes_open.set()
    fake.sends_open.set()
    called = anyio.Event()

    def broken(future: SendFuture) -> None:
        called.set()
        raise RuntimeError("callback bug")

    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G", hooks=[_Hook()]) as producer:
            with capture_logs() as logs:
                await producer.submit(Message(topic="T", body=b"a"), callback=broken)
                with anyio.fail_after(10):
                    await called.wait()
                await anyio.wait_all_tasks_blocked()
            errors = [e for e in logs if e["event"] == "producer.send_callback_error"]
            assert [e["callback"] for e in errors] == [f"{__name__}.{broken.__qualname__}"]
