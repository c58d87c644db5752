"""Which interpreter Spark's Python workers run, chosen when the source is registered."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.spark.python import SparkSetupError, choose_worker_python


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        return self.values.get(key)


class Context:
    def __init__(self, master: str, conf: dict[str, str] | None = None) -> None:
        self.master = master
        self.pythonExec = "python3"  # what pyspark sets without PYSPARK_PYTHON
        self._conf = Conf(conf or {})

    def getConf(self) -> Conf:
        return self._conf


class Session:
    def __init__(self, context: Context) -> None:
        self.sparkContext = context


@pytest.mark.parametrize("master", ["local", "local[2]", "local-cluster[2,1,1024]"])
def test_a_local_master_without_pyspark_python_gets_this_interpreter(
    master: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    context = Context(master)
    assert choose_worker_python(Session(context)) == sys.executable
    assert context.pythonExec == sys.executable


def test_pyspark_python_and_the_conf_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    context = Context("local[2]", {"spark.pyspark.python": "/nowhere/python"})
    assert choose_worker_python(Session(context)) == sys.executable  # the environment first
    monkeypatch.delenv("PYSPARK_PYTHON")
    on_cluster = Context("spark://h:7077", {"spark.pyspark.python": "/opt/py/bin/python"})
    assert choose_worker_python(Session(on_cluster)) == "/opt/py/bin/python"  # not checked
    default = Context("yarn")
    assert choose_worker_python(Session(default)) == "python3"  # the cluster's own


def test_an_interpreter_without_the_package_is_refused_naming_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'No module named rocketmq_actors' >&2\nexit 1\n")
    python.chmod(0o755)
    monkeypatch.setenv("PYSPARK_PYTHON", str(python))
    with pytest.raises(SparkSetupError) as caught:
        choose_worker_python(Session(Context("local[*]")))
    assert f"set PYSPARK_PYTHON={sys.executable}" in str(caught.value)
    assert str(python) in str(caught.value) and isinstance(caught.value, ConfigError)
    monkeypatch.setenv("PYSPARK_PYTHON", str(tmp_path / "missing"))
    with pytest.raises(SparkSetupError):
        choose_worker_python(Session(Context("local[*]")))
