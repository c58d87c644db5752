"""``message decode`` and the usage mistakes of ``message query/show``: no broker needed."""

from __future__ import annotations

import json

import pytest

from rocketmq_actors.cli import main

JAVA_UNIQ = "0A00C07AC3B718B4AAC230B977520000"
JAVA_OFFSET = "0A00C07A00002A9F0000000000000000"


def test_decode_tells_the_two_forms_apart(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["message", "decode", JAVA_OFFSET, "--json"]) == 0
    offset = json.loads(capsys.readouterr().out)
    assert offset == {"msg_id": JAVA_OFFSET, "kind": "offset",
                      "store_host": "10.0.192.122:10911", "commit_log_offset": 0}  # fmt: skip
    assert main(["message", "decode", JAVA_UNIQ.lower(), "--json"]) == 0
    uniq = json.loads(capsys.readouterr().out)
    assert (uniq["kind"], uniq["client_ip"], uniq["pid"]) == ("unique", "10.0.192.122", 0xC3B7)
    assert main(["message", "decode", JAVA_UNIQ]) == 0  # plain: one field per line
    assert "client_ip         10.0.192.122" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["message", "decode", "zz"], ["msg_id", "not hex"]),
        (["message", "show", "0A00"], ["msg_id", "32 or 56"]),
        (["message", "show", JAVA_UNIQ], ["unique key", "--topic"]),
        (["message", "query", "--topic", "T"], ["--topic and --key"]),
        (["message", "query", "--topic", "T", "--key", "k", "--begin", "yesterday"], ["--begin"]),
        (["message", "query", "--topic", "T", "--key", "k", "--begin", "5", "--end", "4"],
         ["after"]),
        (["message", "query", "--topic", "T", "--key", "k", "--max", "0"], ["--max"]),
        (["message", "query", "--topic", "bad topic!", "--key", "k"], ["topic"]),
    ],
)  # fmt: skip
def test_usage_mistakes_exit_2_before_connecting(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # an address nothing listens on: a command that got as far as connecting would exit 1
    assert main([*argv, "--namesrv", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    for word in words:
        assert word in err, err


def test_query_needs_a_namesrv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert main(["message", "query", "--topic", "T", "--key", "k"]) == 2
    assert "--namesrv" in capsys.readouterr().err
