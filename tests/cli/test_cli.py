from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_actors import __version__
from rocketmq_actors.cli import error_line, main
from rocketmq_actors.errors import BrokerError
from rocketmq_actors.protocol.codes import ResponseCode


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_stop_without_state_is_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    assert main(["cluster", "stop", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "state.json" in err and "Traceback" not in err


def test_logging_survives_a_closed_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Log lines to a closed stream are dropped, never raised into the code that logged."""
    import io

    import structlog

    from rocketmq_actors.logs import configure_logging

    configure_logging()
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr("sys.stderr", closed)
    structlog.get_logger("t").warning("connection.closed", addr="x")  # must not raise
    live = io.StringIO()
    monkeypatch.setattr("sys.stderr", live)
    structlog.get_logger("t").warning("connection.closed", addr="y")
    assert "connection.closed" in live.getvalue() and "addr=y" in live.getvalue()


def test_produce_rejects_a_bad_address_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "--namesrv", "nonsense", "--topic", "T"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nonsense" in err and "Traceback" not in err


def test_produce_rejects_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "--namesrv", "127.0.0.1:9876", "--topic", "T", "--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err


UNREACHABLE = "127.0.0.1:1"  # nothing listens there: every connection is refused at once
COMMANDS = {
    "produce": ["produce", "--namesrv", UNREACHABLE, "--topic", "T", "--count", "1"],
    "consume": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G"],
    "consume --handler": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G",
                          "--follow", "--handler", "json:dumps"],
    "route": ["route", "--namesrv", UNREACHABLE, "--topic", "T"],
    "topic list": ["topic", "list", "--namesrv", UNREACHABLE],
    "topic create": ["topic", "create", "--namesrv", UNREACHABLE, "--topic", "T"],
    "group": ["group", "--namesrv", UNREACHABLE, "--group", "G", "--topic", "T"],
    "consume --count": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G",
                        "--count", "3"],
    "peek": ["peek", "--namesrv", UNREACHABLE, "--topic", "T"],
    "topic status": ["topic", "status", "--namesrv", UNREACHABLE, "--topic", "T"],
    "topic delete": ["topic", "delete", "--namesrv", UNREACHABLE, "--topic", "T"],
    "cluster list": ["cluster", "list", "--namesrv", UNREACHABLE],
    "broker status": ["broker", "status", "--namesrv", UNREACHABLE],
    "group list": ["group", "list", "--namesrv", UNREACHABLE],
    "group describe": ["group", "describe", "--namesrv", UNREACHABLE, "--group", "G"],
    "group reset-offset": ["group", "reset-offset", "--namesrv", UNREACHABLE, "--group", "G",
                           "--topic", "T", "--to-latest"],
    "bench": ["bench", "--namesrv", UNREACHABLE, "--count", "10"],
}  # fmt: skip


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_an_unreachable_cluster_is_one_line_and_exit_status_1(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a 100-line ExceptionGroup traceback from ``consume``. The command ran and its
    work failed: exit status 1 (2 is for usage mistakes)."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert "NameServer" in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


USAGE = {
    "produce --property": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                           "--property", "novalue"],
    "produce two bodies": ["produce", "--namesrv", UNREACHABLE, "--topic", "T", "--body", "x",
                           "--stdin"],
    "produce --body-file": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                            "--body-file", "/nonexistent/body"],
    "reset without target": ["group", "reset-offset", "--namesrv", UNREACHABLE, "--group", "G",
                             "--topic", "T"],
    "reset bad time": ["group", "reset-offset", "--namesrv", UNREACHABLE, "--group", "G",
                       "--topic", "T", "--to-time", "yesterday"],
    "describe without group": ["group", "describe", "--namesrv", UNREACHABLE],
    "topic bad perm": ["topic", "create", "--namesrv", UNREACHABLE, "--topic", "T",
                       "--perm", "x"],
    "topic zero queues": ["topic", "create", "--namesrv", UNREACHABLE, "--topic", "T",
                          "--queues", "0"],
    "peek bad queue": ["peek", "--namesrv", UNREACHABLE, "--topic", "T", "--queue", "a"],
    "peek bad count": ["peek", "--namesrv", UNREACHABLE, "--topic", "T", "--count", "0"],
    "bad topic name": ["topic", "status", "--namesrv", UNREACHABLE, "--topic", "a b"],
    "bad address": ["cluster", "list", "--namesrv", "nonsense"],
    "bad log level": ["--log-level", "BOGUS", "topic", "list", "--namesrv", UNREACHABLE],
    "bad log level after": ["topic", "list", "--namesrv", UNREACHABLE, "--log-level", "BOGUS"],
    "produce huge size": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                          "--size", "10000000000000"],
    "produce negative rate": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                              "--rate", "-1"],
    "produce NaN rate": ["produce", "--namesrv", UNREACHABLE, "--topic", "T", "--rate", "nan"],
    "produce unreadable body file": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                                     "--body-file", "/proc/self/mem"],
    "produce -K without --stdin": ["produce", "--namesrv", UNREACHABLE, "--topic", "T",
                                   "-K", ":"],
    "peek negative timestamp": ["peek", "--namesrv", UNREACHABLE, "--topic", "T",
                                "--from-timestamp", "-1"],
    "peek bad format": ["peek", "--namesrv", UNREACHABLE, "--topic", "T", "--format", "%z"],
    "consume bad format": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G",
                           "--format", "%s\\q"],
}  # fmt: skip


@pytest.mark.parametrize("argv", USAGE.values(), ids=USAGE.keys())
def test_a_usage_mistake_is_one_line_and_exit_status_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before any network I/O (the address is unreachable, and never tried)."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err and "answered" not in captured.err
    assert captured.out == ""


def test_namesrv_defaults_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", UNREACHABLE)
    assert main(["topic", "list"]) == 1
    assert UNREACHABLE in capsys.readouterr().err


def test_the_logging_flags_work_after_the_command_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["topic", "list", "--namesrv", UNREACHABLE, "--log-level", "debug", "--log-json"]) == 1
    )
    err = capsys.readouterr().err
    # JSON lines, and info ones: below the default level (warning), so the flag took effect
    assert '"event": "client.stopped", "level": "info"' in err, err


def test_no_nameserver_at_all_names_both_ways_to_give_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert main(["topic", "list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--namesrv" in err and "$NAMESRV_ADDR" in err


def test_table_aligns_numbers_right_and_shows_none_as_a_dash() -> None:
    from rocketmq_actors.cli.common import table

    rows = [{"name": "a", "n": 5, "ok": True, "x": None}, {"name": "bbb", "n": 123, "ok": False}]
    assert table(rows, ["name", "n", "ok", "x"]).splitlines() == [
        "name    n  ok     x",
        "a       5  True   -",
        "bbb   123  False  -",
    ]


def test_exit_status_by_error_kind() -> None:
    from rocketmq_actors.cli import exit_status
    from rocketmq_actors.errors import ConfigError, NameServerUnavailable, TopicNotFound

    assert exit_status(ConfigError("bad")) == 2
    assert exit_status(ImportError("no extra")) == 2  # a missing optional package
    assert exit_status(NameServerUnavailable("none answered")) == 1
    assert exit_status(TopicNotFound("T")) == 1
    assert exit_status(KeyError("bug")) is None  # a bug keeps its traceback


def test_a_value_error_after_a_client_started_is_work_that_failed() -> None:
    import json

    from rocketmq_actors.cli import exit_status
    from rocketmq_actors.errors import InvalidMessage, UnsupportedByBroker

    late = [InvalidMessage("the body is empty"), UnsupportedByBroker("x", "127.0.0.1:1", "V4"),
            json.JSONDecodeError("bad", "{", 0)]  # fmt: skip
    for exc in late:
        assert exit_status(exc) == 2  # refused before any client started: a usage mistake
        assert exit_status(exc, client_started=True) == 1


@pytest.mark.parametrize(
    ("option", "content"),
    [("--body", None), ("--body-file", b""), ("--body-file", b"x" * (4 * 1024 * 1024 + 1))],
    ids=["empty --body", "empty --body-file", "oversized --body-file"],
)
def test_produce_refuses_a_bad_body_before_connecting(
    option: str, content: bytes | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = ""
    if content is not None:
        value = str(tmp_path / "body")
        Path(value).write_bytes(content)
    # nothing listens at UNREACHABLE: a connection attempt would make it exit status 1
    assert main(["produce", "--namesrv", UNREACHABLE, "--topic", "T", option, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "body" in err and "Traceback" not in err


def test_produce_refuses_a_bad_topic_or_key_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["produce", "--namesrv", UNREACHABLE, "--topic", "bad topic"]) == 2
    assert "bad topic" in capsys.readouterr().err
    assert main(["produce", "--namesrv", UNREACHABLE, "--topic", "T", "--key", "a b"]) == 2
    assert "'a b'" in capsys.readouterr().err


def test_an_error_line_carries_the_errors_notes() -> None:
    error = BrokerError("10.0.0.2:10911", ResponseCode.NO_PERMISSION, "refused\nhere")
    assert error_line(error) == "10.0.0.2:10911 answered NO_PERMISSION: refused here"
    error.add_note("applied on broker-a before broker-b failed")
    assert error_line(error).endswith(": refused here; applied on broker-a before broker-b failed")
