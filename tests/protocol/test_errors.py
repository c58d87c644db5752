"""``caused``: raise-from, written so that mypyc keeps it, and the modules it may compile held
to it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks.compiled import candidates
from rocketmq_actors.protocol.errors import ProtocolError, caused

PACKAGE = Path(__file__).resolve().parents[2] / "rocketmq_actors"


def _raised(cause: BaseException | None, *, helper: bool) -> BaseException:
    try:
        try:
            raise KeyError("handled")
        except KeyError:
            if helper:
                raise caused(ProtocolError("bad"), cause)  # noqa: B904
            raise ProtocolError("bad") from cause
    except ProtocolError as error:
        return error


@pytest.mark.parametrize("cause", [ValueError("why"), None])
def test_caused_is_raise_from(cause: BaseException | None) -> None:
    expected = _raised(cause, helper=False)
    got = _raised(cause, helper=True)
    assert got.__cause__ is cause is expected.__cause__
    assert got.__suppress_context__ and expected.__suppress_context__
    assert isinstance(got.__context__, KeyError) and isinstance(expected.__context__, KeyError)


def _violations(module: str, source: str | None = None) -> list[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text() if source is None else source)
    found = [f"{module}:{n.lineno} raise ... from" for n in ast.walk(tree)
             if isinstance(n, ast.Raise) and n.cause is not None]  # fmt: skip
    for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
        for statement in handler.body:
            for node in ast.walk(statement):
                # ruff's B904, which pyproject.toml turns off for these modules: a new exception
                # raised while handling one says whether it was caused by it
                if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                        and not (isinstance(node.exc.func, ast.Name)
                                 and node.exc.func.id == "caused")):  # fmt: skip
                    found.append(f"{module}:{node.lineno} raise without caused() in an except")
    return found


SAMPLE = """
try:
    pass
except KeyError as exc:
    raise ValueError("a") from exc
except OSError:
    raise ValueError("b")
except TypeError as exc:
    raise caused(ValueError("c"), exc)
except IndexError:
    raise
"""


def test_the_modules_mypyc_may_compile_chain_with_caused() -> None:
    # the scan sees both mistakes, and neither caused() nor a bare re-raise
    assert _violations("sample", SAMPLE) == [
        "sample:5 raise ... from",
        "sample:5 raise without caused() in an except",
        "sample:7 raise without caused() in an except",
    ]
    assert len(candidates()) > 20
    assert [v for module in candidates() for v in _violations(module)] == []
