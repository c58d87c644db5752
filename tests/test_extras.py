"""Missing extras: each optional package, simulated missing, gives MissingExtra naming the
extra to install - from the library, the Spark package, tracing, uvloop, and the CLI."""

from __future__ import annotations

import asyncio
import importlib
import io
import sys
from collections.abc import Iterator

import anyio
import pytest

from rocketmq_actors.cli import main
from rocketmq_actors.cli import progress as progress_module
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.extras import MissingExtra, require, uvloop_options, uvloop_policy
from rocketmq_actors.metrics import Metrics
from rocketmq_actors.producer import Producer
from rocketmq_actors.tracing import Tracing


def missing(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Import of each name fails as if not installed (None in sys.modules: Python's own way)."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def install_hint(extra: str) -> str:
    return f"pip install 'rocketmq-actors[{extra}]'"


@pytest.mark.parametrize(
    ("module", "extra"),
    [("prometheus_client", "prometheus"), ("opentelemetry.trace", "otel"), ("pyspark", "spark"),
     ("pyarrow", "spark"), ("rich", "cli"), ("uvloop", "uvloop"), ("orjson", "orjson")],
)  # fmt: skip
def test_require_names_the_extra_of_each_optional_package(
    monkeypatch: pytest.MonkeyPatch, module: str, extra: str
) -> None:
    assert require(module).__name__ == module  # installed here (the dev extra)
    missing(monkeypatch, module)
    with pytest.raises(MissingExtra) as caught:
        require(module, purpose="this")
    error = caught.value
    assert isinstance(error, RocketMQError) and isinstance(error, ImportError)
    assert error.extra == extra and error.module == module.partition(".")[0]
    assert str(error) == f"this needs {error.module}: {install_hint(extra)}"


def test_a_broken_install_is_not_advice_to_install_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(name: str) -> None:  # the package is there; one of its own imports is not
        raise ImportError("no _ssl", name="_ssl")

    monkeypatch.setattr("rocketmq_actors.extras.importlib.import_module", broken)
    with pytest.raises(ImportError) as caught:
        require("prometheus_client")
    assert not isinstance(caught.value, MissingExtra)


def test_pyspark_without_pyarrow_names_pyarrow_and_the_spark_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_pyarrow(name: str) -> None:
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    monkeypatch.setattr("rocketmq_actors.extras.importlib.import_module", no_pyarrow)
    with pytest.raises(
        MissingExtra, match=r"needs pyarrow: pip install 'rocketmq-actors\[spark\]'"
    ):
        require("pyspark.sql.datasource")


def test_an_unknown_module_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        require("numpy")


def test_prometheus_export_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = Metrics()
    missing(monkeypatch, "prometheus_client")
    with pytest.raises(MissingExtra, match=r"Prometheus export .*\[prometheus\]"):
        metrics.prometheus_collector()


def test_tracing_without_the_extra_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    missing(monkeypatch, "opentelemetry.trace")
    with pytest.raises(MissingExtra, match=r"tracing needs opentelemetry: .*\[otel\]"):
        Tracing("G")
    with pytest.raises(MissingExtra, match=r"\[otel\]"):  # before any I/O
        Producer(namesrv="127.0.0.1:1", group="G_extras", client=ClientOptions(tracing=True))


@pytest.fixture
def spark_unloaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # import the package afresh; the test's monkeypatch puts the loaded modules back
    for name in [n for n in sys.modules if n.startswith("rocketmq_actors.spark")]:
        monkeypatch.delitem(sys.modules, name)
    yield


@pytest.mark.parametrize("absent", ["pyspark", "pyarrow"])
@pytest.mark.usefixtures("spark_unloaded")
def test_the_spark_package_without_the_extra(monkeypatch: pytest.MonkeyPatch, absent: str) -> None:
    missing(monkeypatch, absent)
    with pytest.raises(MissingExtra, match=rf"rocketmq_actors.spark needs {absent}: .*\[spark\]"):
        importlib.import_module("rocketmq_actors.spark")


def test_uvloop_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert uvloop_options(False) == {}  # not asked: not needed
    missing(monkeypatch, "uvloop")
    with pytest.raises(MissingExtra, match=r"\[uvloop\]"):
        uvloop_options()
    with pytest.raises(MissingExtra, match=r"\[uvloop\]"), uvloop_policy():
        pass


def test_the_uvloop_policy_makes_the_loops_inside_and_is_undone() -> None:
    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    with uvloop_policy():
        assert anyio.run(loop_module).startswith("uvloop")
    assert not anyio.run(loop_module).startswith("uvloop")
    assert anyio.run(loop_module, backend_options=uvloop_options()).startswith("uvloop")


def test_the_cli_says_which_extra_in_one_line_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing(monkeypatch, "uvloop")
    status = main(["--uvloop", "produce", "--namesrv", "127.0.0.1:1", "--topic", "T_extras"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines() == [
        "rocketmq-actors: error: --uvloop (the uvloop event loop) needs uvloop: "
        + install_hint("uvloop")
    ]


def test_a_progress_bar_without_rich_names_the_cli_extra_then_writes_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "Console", None)  # as the import fallback leaves it
    stream = io.StringIO()
    with progress_module.ProgressReport(
        "sent", total=4, stream=stream, force_terminal=True, every=2
    ) as bar:
        bar.advance(4)
    first, *lines = stream.getvalue().splitlines()
    assert install_hint("cli") in first
    assert [line.split(" (")[0] for line in lines] == ["sent 4/4"]
