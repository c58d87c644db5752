"""Which Python the executors run: the data source's code must import there.

Spark starts its Python workers (on the executors, and the planner on the driver) with
``PYSPARK_PYTHON``, else ``python3`` from the PATH, which is rarely the virtualenv the driver
runs from: the first read or write then fails on the executors with ``ModuleNotFoundError: No
module named 'rocketmq_actors'``. :func:`choose_worker_python`, called by
:func:`rocketmq_actors.spark.register`, settles it on the driver instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.logs import get_logger

__all__ = ["SparkSetupError", "choose_worker_python"]

log = get_logger("rocketmq_actors.spark")

#: importing the package in a fresh interpreter; a cold start on a busy machine is slow
CHECK_TIMEOUT = 120.0


class SparkSetupError(ConfigError):
    """Spark's Python workers cannot run the data source (raised when it is registered)."""


def _imports_us(python: str) -> bool:
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return True
    try:
        done = subprocess.run(  # the interpreter Spark would start
            [python, "-c", "import rocketmq_actors.spark"], capture_output=True,
            timeout=CHECK_TIMEOUT, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def choose_worker_python(spark: Any) -> str:
    """The interpreter Spark's Python workers will run, made this one when nothing chose.

    - ``PYSPARK_PYTHON`` set when the session started: kept;
    - else ``spark.pyspark.python`` in the session's conf: used;
    - else, on a local master (``local``, ``local[N]``, ``local-cluster[...]``: the workers
      run on this machine), this interpreter (``sys.executable``).

    On a local master, an interpreter that cannot import ``rocketmq_actors`` raises
    :class:`SparkSetupError` saying what to set. On a cluster, the executors' machines decide
    what their interpreter has; nothing is checked.
    """
    context = spark.sparkContext
    local = str(context.master).startswith("local")
    chosen = os.environ.get("PYSPARK_PYTHON") or context.getConf().get("spark.pyspark.python")
    if chosen:
        source = "PYSPARK_PYTHON" if os.environ.get("PYSPARK_PYTHON") else "spark.pyspark.python"
    elif local:
        chosen, source = sys.executable, "driver"
    else:
        chosen, source = context.pythonExec, "spark default"
    context.pythonExec = chosen  # what the data source's functions carry to the workers
    log.info("spark.worker_python", python=chosen, source=source, master=str(context.master))
    if local and not _imports_us(chosen):
        raise SparkSetupError(
            f"Spark's Python workers would run {chosen} (from {source}), which cannot import "
            f"rocketmq_actors: set PYSPARK_PYTHON={sys.executable} before the SparkSession "
            "starts (or leave it unset on a local master)"
        )
    return chosen
