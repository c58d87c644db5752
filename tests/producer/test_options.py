"""ProducerOptions: a frozen value checked when it is built (the same ConfigError messages as
the producer's keyword arguments had), and the names of the producer's calls: ``submit``
awaits admission, ``send_nowait`` never awaits (ProducerBusy when no slot is free)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import ConfigError, ProducerBusy, RocketMQError
from rocketmq_actors.producer import (
    CompressionType,
    Message,
    Producer,
    ProducerOptions,
    TransactionProducer,
)
from rocketmq_actors.producer.group import ProducerGroup
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE
from rocketmq_actors.testing.fakeserver import FakeServer
from tests.test_docs import _matches, _table

from .fakes import GatedCluster

PACKAGE = Path(__file__).resolve().parents[2] / "rocketmq_actors"

BAD: list[tuple[dict[str, Any], str]] = [
    ({"send_timeout": 0}, r"send_timeout must be a finite number of seconds > 0, not 0"),
    ({"send_timeout": float("nan")}, "send_timeout must be a finite number"),
    ({"send_timeout": "3"}, "send_timeout must be a number of seconds, not str"),
    ({"attempt_timeout": -1.0}, "attempt_timeout must be a finite number of seconds > 0"),
    ({"send_timeout": 2.0, "attempt_timeout": 2.5},
     r"attempt_timeout \(2.5\) must not exceed send_timeout \(2.0\)"),
    ({"retry_times": -1}, "retry_times must be >= 0, not -1"),
    ({"retry_times": 1.5}, "retry_times must be an integer, not float"),
    ({"compress_threshold": -1}, "compress_threshold must be >= 0, not -1"),
    ({"compress_level": 10}, r"compress_level must be in 0..9, not 10"),
    ({"compress_type": "zstd", "compress_level": 23}, r"compress_level must be in 0..22"),
    ({"compress_type": "snappy"}, "compress_type must be one of 'zlib', 'lz4', 'zstd'"),
    ({"compress_type": 3}, "compress_type must be one of"),
    ({"max_message_size": 0}, r"max_message_size must be in 1..16515072, not 0"),
    ({"max_message_size": 16 * 1024 * 1024},
     r"max_message_size must be in 1..16515072, not 16777216"),
    ({"max_pending": 0}, "max_pending must be >= 1, not 0"),
    ({"max_pending": True}, "max_pending must be an integer, not bool"),
    ({"max_pending_bytes": 0}, "max_pending_bytes must be >= 1, not 0"),
    ({"latency_fault_tolerance": "yes"}, "latency_fault_tolerance must be bool"),
    ({"retry_another_broker_when_not_store_ok": 1},
     "retry_another_broker_when_not_store_ok must be bool"),
]  # fmt: skip


@pytest.mark.parametrize(("values", "message"), BAD, ids=[next(iter(v)) for v, _ in BAD])
def test_a_bad_option_fails_when_the_options_are_built(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ProducerOptions(**values)
    with pytest.raises(ConfigError, match=message):  # evolve checks as the constructor does
        ProducerOptions().evolve(**values)


def test_the_defaults_are_the_producers_and_the_value_is_frozen() -> None:
    options = ProducerOptions()
    assert attrs.asdict(options) == {
        "send_timeout": 3.0, "attempt_timeout": None, "retry_times": 2,
        "retry_another_broker_when_not_store_ok": False, "compress_threshold": 4096,
        "compress_level": 5, "compress_type": CompressionType.ZLIB,
        "max_message_size": MAX_MESSAGE_SIZE, "max_pending": 1024,
        "max_pending_bytes": 64 * 1024 * 1024, "latency_fault_tolerance": False,
        "auto_batch": False, "batch_max_delay": 0.01, "batch_max_bytes": 32 * 1024,
        "total_batch_max_bytes": 32 * 1024 * 1024,
    }  # fmt: skip
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.send_timeout = 1.0  # type: ignore[misc]
    assert options.evolve(compress_type="ZSTD").compress_type is CompressionType.ZSTD
    assert options == ProducerOptions() and hash(options) == hash(ProducerOptions())


def test_the_documented_table_is_the_options_class() -> None:
    params = {name: p.default for name, p in inspect.signature(ProducerOptions).parameters.items()}
    table = _table("ProducerOptions")
    assert set(table) == set(params), "docs/operations.md and ProducerOptions differ"
    assert not {n: (table[n], params[n]) for n in params if not _matches(table[n], params[n])}


def test_the_constructors_take_option_values_not_their_fields() -> None:
    for cls in (Producer, TransactionProducer, BlockingProducer):
        parameters = inspect.signature(cls).parameters
        assert len(parameters) <= 15, cls
        assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values()), cls
        assert {"options", "client"} <= set(parameters)
        assert not set(parameters) & set(attrs.fields_dict(ProducerOptions)), cls
        assert not set(parameters) & (set(attrs.fields_dict(ClientOptions)) - {"namesrv"}), cls
    with pytest.raises(ConfigError, match="options must be a ProducerOptions, not dict"):
        Producer(namesrv="127.0.0.1:1", options={"send_timeout": 1.0})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="client must be a ClientOptions"):
        Producer(namesrv="127.0.0.1:1", client=ProducerOptions())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="give the NameServer once"):
        Producer(namesrv="127.0.0.1:1", client=ClientOptions(namesrv="127.0.0.1:2"))


def test_the_client_options_reach_the_producer() -> None:
    producer = Producer(
        namesrv="127.0.0.1:1", group="G", topics=["T"],
        client=ClientOptions(namespace="ns", trace=True, shutdown_timeout=2.0),
    )  # fmt: skip
    assert producer.group == "ns%G" and producer._group._topics == ["ns%T"]
    assert producer._group.trace is not None
    assert producer._group.shutdown_timeout == 2.0
    assert producer.tree().name == "Producer(ns%G)"


def _coroutine_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)]


def test_no_coroutine_function_in_the_package_is_named_nowait() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in _coroutine_functions(path)
        if name.endswith("_nowait")
    ]
    assert found == []
    assert not inspect.iscoroutinefunction(Producer.send_nowait)
    assert not inspect.iscoroutinefunction(ProducerGroup.admit)
    assert inspect.iscoroutinefunction(Producer.submit)
    assert inspect.iscoroutinefunction(Producer.submit_request)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, function-level imports included (absolute names)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_no_collaborator_imports_its_owner() -> None:
    producer = PACKAGE / "producer"
    owners = {"rocketmq_actors.producer.producer", "rocketmq_actors.producer.group",
              "rocketmq_actors.producer.transaction"}  # fmt: skip
    for module in ("requestreply", "sendloop", "attempt", "senders", "recall", "tracesend"):
        assert not _imports(producer / f"{module}.py") & owners, module
    assert "rocketmq_actors.producer.sendloop" not in _imports(producer / "attempt.py")
    for path in (PACKAGE / "trace").glob("*.py"):
        assert not any(n.startswith("rocketmq_actors.producer") for n in _imports(path)), path


async def test_send_nowait_admits_at_once_or_raises_producer_busy() -> None:
    fake = GatedCluster()
    fake.routes_open.set()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        options = ProducerOptions(max_pending=2, send_timeout=10.0)
        async with Producer(namesrv=server.addr, group="G", options=options) as producer:
            first = producer.send_nowait(Message(topic="T", body=b"1"))
            second = producer.send_nowait(Message(topic="T", body=b"2"))
            with pytest.raises(ProducerBusy, match="max_pending=2") as busy:
                producer.send_nowait(Message(topic="T", body=b"3"))
            assert isinstance(busy.value, RocketMQError)
            assert busy.value.retriable and not busy.value.outcome_unknown
            assert producer._group.senders.pending == 2  # the refused one left no trace
            fake.sends_open.set()
            with anyio.fail_after(5):
                assert (await first).offset_msg_id == (await second).offset_msg_id == "AB"
                third = producer.send_nowait(Message(topic="T", body=b"3"))  # room again
                assert (await third).queue.topic == "T"
            assert producer._group.senders.pending == 0
    assert fake.sends == 3


async def test_an_ordered_send_nowait_needs_its_route_and_keeps_its_order() -> None:
    fake = GatedCluster()
    fake.routes_open.set()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        options = ProducerOptions(send_timeout=10.0)
        async with Producer(namesrv=server.addr, group="G", options=options) as producer:
            keyed = Message(topic="T", body=b"k0")
            with pytest.raises(ProducerBusy, match="route was never looked up"):
                producer.send_nowait(keyed, sharding_key="user-1")  # (nothing known of T)
            await producer.instance.routes.get("T")
            futures = [
                producer.send_nowait(Message(topic="T", body=b"k%d" % i), sharding_key="user-1")
                for i in range(3)
            ]
            with anyio.fail_after(5):
                await fake.wait_sends(1)
            await anyio.wait_all_tasks_blocked()  # (whatever could run next has run)
            assert fake.sends == 1  # the next in its lane waits for the first's answer
            assert producer._group.senders.pending == 3
            assert not any(f.done() for f in futures)
            fake.sends_open.set()
            with anyio.fail_after(5):
                results = [await f for f in futures]
    assert len({r.queue for r in results}) == 1 and fake.sends == 3
