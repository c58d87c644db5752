"""Optional dependencies: one helper to import them, one error naming the extra to install.

    prometheus = require("prometheus_client", extra="prometheus", purpose="Prometheus export")

raises :class:`MissingExtra` when the package is not installed::

    Prometheus export needs prometheus_client: pip install 'rocketmq-actors[prometheus]'

``MissingExtra`` is an :class:`ImportError` too, so ``except ImportError`` written before it
existed still catches it; the command line prints it as one line and exits with status 2.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from rocketmq_actors.errors import RocketMQError

__all__ = ["EXTRAS", "MissingExtra", "require", "uvloop_options", "uvloop_policy"]

#: the top-level module each extra of pyproject.toml provides, and the extra's name
EXTRAS: dict[str, str] = {
    "prometheus_client": "prometheus",
    "opentelemetry": "otel",
    "pyspark": "spark",
    "pyarrow": "spark",
    "rich": "cli",
    "uvloop": "uvloop",
    "orjson": "orjson",
    "matplotlib": "bench",
    "faststream": "faststream",
}


class MissingExtra(RocketMQError, ImportError):
    """An optional package a feature needs is not installed; ``extra`` names what to install."""

    def __init__(self, module: str, extra: str, purpose: str | None = None) -> None:
        self.module, self.extra = module, extra
        what = purpose or "this feature of rocketmq-actors"
        super().__init__(f"{what} needs {module}: pip install 'rocketmq-actors[{extra}]'")
        self.name = module  # ImportError's attribute: the module that could not be imported


def require(module: str, *, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """Import ``module`` (dotted names too) or raise :class:`MissingExtra` naming the extra.

    ``extra`` defaults to the one :data:`EXTRAS` lists for the module's top-level package.
    A missing package the same extra installs (pyarrow under pyspark) is named as missing too;
    an ImportError of anything else raised from inside an installed package (a broken install)
    is not turned into advice to install the extra: it propagates.
    """
    top = module.partition(".")[0]
    extra = extra or EXTRAS.get(top)
    if extra is None:
        raise KeyError(f"{module!r} is not an optional dependency of rocketmq-actors")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (exc.name or top).partition(".")[0]
        if missing != top and EXTRAS.get(missing) != extra:
            raise  # the package is there, something it imports is not
        raise MissingExtra(missing, extra, purpose) from None


def uvloop_options(enabled: bool = True) -> dict[str, Any]:
    """``anyio.run``'s ``backend_options`` for uvloop (``{}`` when not ``enabled``); without
    the ``uvloop`` extra, :class:`MissingExtra` instead of anyio's bare ModuleNotFoundError."""
    if not enabled:
        return {}
    require("uvloop", purpose="the uvloop event loop")
    return {"use_uvloop": True}


@contextmanager
def uvloop_policy() -> Iterator[None]:
    """Event loops made inside (``anyio.run`` on asyncio, ``asyncio.run``) are uvloop's: the
    command line's ``--uvloop``, whose commands each start their own loop."""
    uvloop = require("uvloop", purpose="--uvloop (the uvloop event loop)")
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(previous)
