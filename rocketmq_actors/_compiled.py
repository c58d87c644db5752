"""Whether a module of the package runs compiled: the optional wheel's send path is built with
mypyc (hatch_build.py), each module an extension beside its source."""

from __future__ import annotations

__all__ = ["is_compiled"]


def is_compiled(module_file: str | None) -> bool:
    """Is the module whose ``__file__`` this is an extension module? (A ``.py``, or a ``.pyc``
    alone, is interpreted.)"""
    return module_file is not None and module_file.endswith((".so", ".pyd"))
