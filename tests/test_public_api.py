"""The public face of the clients (issue 42): constructors a user can read (at most 15
parameters: what nearly every user sets, then the option objects), names that keep Python's
conventions (a ``*_nowait`` never awaits), and every public name of a client documented in
docs/usage.md or docs/operations.md."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rocketmq_actors
from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.consumer.pop import PopConsumer
from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.producer import Producer
from rocketmq_actors.producer.transaction import TransactionProducer

DOCS = Path(__file__).resolve().parents[1] / "docs"

CLIENTS = [Producer, TransactionProducer, PushConsumer, PullConsumer, PopConsumer,
           BlockingProducer]  # fmt: skip

MAX_PARAMETERS = 15


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda cls: cls.__name__)
def test_no_client_constructor_takes_more_than_15_parameters(cls: type[object]) -> None:
    parameters = list(inspect.signature(cls).parameters)
    assert len(parameters) <= MAX_PARAMETERS, (len(parameters), parameters)


def _modules() -> Iterator[ModuleType]:
    """Every module of the package; those of an optional extra that is not installed (an
    ImportError) are left out, and ``__main__`` modules (they run the CLI) are not imported."""
    package = rocketmq_actors.__name__
    walk = pkgutil.walk_packages(rocketmq_actors.__path__, f"{package}.", onerror=lambda _: None)
    names = [package] + [info.name for info in walk]
    for name in names:
        if name.rsplit(".", 1)[-1] == "__main__":
            continue
        try:
            yield importlib.import_module(name)
        except ImportError:
            continue


def _coroutine_functions(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """The coroutine functions a module defines, and the methods of its classes."""
    for name, value in vars(module).items():
        if inspect.iscoroutinefunction(value) and value.__module__ == module.__name__:
            yield f"{module.__name__}.{name}", value
        if inspect.isclass(value) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                function = getattr(member, "__func__", member)  # (static and class methods)
                if inspect.iscoroutinefunction(function):
                    yield f"{module.__name__}.{value.__qualname__}.{attr}", function


def test_no_coroutine_function_is_named_nowait() -> None:
    """A ``*_nowait`` is a plain function that never awaits (it raises when no slot is
    free); a method that awaits admission and returns a future is named for that."""
    modules = list(_modules())
    assert len(modules) > 50  # (the walk found the package)
    named = sorted(
        qualified
        for module in modules
        for qualified, function in _coroutine_functions(module)
        if function.__name__.endswith("_nowait") or qualified.endswith("_nowait")
    )
    assert not named


def _documented(name: str, text: str) -> bool:
    """``name`` appears in backticks (called or not: `` `name` ``, `` `name(...)` ``), or as an
    attribute (``.name``)."""
    word = re.escape(name)
    return re.search(rf"`{word}[`(]|\.{word}\b", text) is not None


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda cls: cls.__name__)
def test_every_public_name_of_a_client_is_documented(cls: type[object]) -> None:
    text = "\n".join((DOCS / page).read_text() for page in ("usage.md", "operations.md"))
    public = [name for name in dir(cls) if not name.startswith("_")]
    assert public
    assert not [name for name in public if not _documented(name, text)]


def test_the_public_api_imports_from_the_package_root() -> None:
    from rocketmq_actors import (  # the line
        Message,
        PopConsumer,
        Producer,
        PullConsumer,
        PushConsumer,
        RocketMQError,
    )

    assert Producer is CLIENTS[0] and Message.__module__.startswith("rocketmq_actors.")
    assert {PushConsumer, PullConsumer, PopConsumer} <= set(CLIENTS)
    assert issubclass(rocketmq_actors.ProducerBusy, RocketMQError)
    assert set(rocketmq_actors.__all__) == {"__version__", *rocketmq_actors._EXPORTS}
    for name in rocketmq_actors.__all__:  # each resolves, from the module it names
        assert getattr(rocketmq_actors, name) is not None, name
    with pytest.raises(AttributeError):
        rocketmq_actors.NotAName  # noqa: B018


def test_importing_the_root_loads_no_client_until_one_is_used() -> None:
    """(A Spark worker or the launcher's watchdog imports one part of the package.)"""
    code = (
        "import sys, rocketmq_actors\n"
        "assert 'rocketmq_actors.producer' not in sys.modules\n"
        "assert 'anyio' not in sys.modules\n"
        "rocketmq_actors.Producer\n"
        "assert 'rocketmq_actors.producer' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


#: exceptions that never leave the package (caught where they are raised, each a signal
#: between two of its parts), and the launcher's and the CLI's own families
INTERNAL = {
    "rocketmq_actors.consumer.core.delivery.Abandoned",
    "rocketmq_actors.runtime.mailbox.MailboxFull",
    "rocketmq_actors.runtime.mailbox.MailboxClosed",
    "rocketmq_actors.runtime.wire.ConnectionClosedByPeer",
    "rocketmq_actors.cli.common.UsageError",
    # decode_records' signal to a caller on an event loop: inflate elsewhere (brokercalls)
    "rocketmq_actors.protocol.records.CompressedRecord",
    # decode_records' signal that a pull's inflation budget is spent: read on later (brokercalls)
    "rocketmq_actors.protocol.records.InflationDeferred",
}


def test_every_exception_the_package_raises_to_a_user_is_a_rocketmq_error() -> None:
    """One ``except RocketMQError`` catches whatever the clients raise: the sans-IO layer's
    ``ProtocolError`` (bad bytes from a server) and the Spark sink's error included."""
    outside = {
        f"{module.__name__}.{name}"
        for module in _modules()
        if not module.__name__.startswith("rocketmq_actors.testing")
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and not issubclass(value, rocketmq_actors.RocketMQError)
    }  # fmt: skip
    assert outside == INTERNAL
    assert issubclass(rocketmq_actors.ProtocolError, rocketmq_actors.RocketMQError)
