"""``rocketmq-actors produce`` against the real cluster, in a subprocess as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from ._run import cli

# once: the CLI's produce over the client's send, tested on every version
pytestmark = [pytest.mark.integration, pytest.mark.once]


def test_produce_json(rocketmq_namesrv: str, unique_topic: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "produce", "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--count", "500", "--size", "1024", "--keys", "--tags", "t",
         "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["sent"] == 500 and result["failed"] == 0 and result["msgs_per_s"] > 0


def test_produce_to_an_unreachable_name_server_fails_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "produce", "--namesrv", "127.0.0.1:1",
         "--topic", "T", "--timeout", "1", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    # the producer cannot start: one line on stderr, exit status 1, no figures
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "NameServer" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_produce_then_consume_round_trip(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    produced = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "produce", "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--count", "200", "--keys", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "consume", "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--group", unique_group, "--from-first", "--count", "200",
         "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    result = json.loads(consumed.stdout.strip().splitlines()[-1])
    assert result["unique"] == 200 and result["received"] >= 200 and result["msgs_per_s"] > 0


def test_consume_stops_on_sigterm_with_a_summary(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_actors", "--log-level", "info", "consume",
         "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--group", unique_group,
         "--follow", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # its own log says when it has joined the group
        if "consumer.started" in line:
            break
    else:
        raise AssertionError(f"consume exited early: {proc.wait()}")
    assert proc.poll() is None  # --follow: still running
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["received"] == 0


def test_produce_stdin_counts_an_invalid_line_as_a_failed_send(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    big = "x" * (4 * 1024 * 1024 + 1)  # over the maximum message size
    proc = cli("produce", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--stdin",
               "--json", stdin=f"one\n\ntwo\n{big}\nthree\n")  # fmt: skip
    # the bad lines are not sent, the others are, in order; the summary says so: exit 1
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (result["sent"], result["failed"]) == (3, 2)
    assert "message 4" in result["last_error"] and "limit" in result["last_error"]
    lines = cli("peek", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--json")
    bodies = sorted(json.loads(line)["body"] for line in lines.stdout.splitlines())
    assert bodies == ["one", "three", "two"]


def _consume_until_started(namesrv: str, topic: str, group: str, *extra: str) -> Any:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_actors", "--log-level", "info", "consume",
         "--namesrv", namesrv, "--topic", topic, "--group", group, "--json", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # its own log says when it has joined the group
        if "consumer.started" in line:
            return proc
    raise AssertionError(f"consume exited early: {proc.wait()}")


@pytest.mark.parametrize(("follow", "status"), [(True, 0), (False, 130)], ids=["follow", "idle"])
def test_consume_on_sigint_stops_gracefully_with_its_exit_status(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, follow: bool, status: int
) -> None:
    # --follow ends on a signal (exit 0, as kcat); a bounded run cut short exits 130
    extra = ("--follow",) if follow else ("--idle", "120")
    proc = _consume_until_started(rocketmq_namesrv, unique_topic, unique_group, *extra)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert json.loads(out.strip().splitlines()[-1])["received"] == 0  # the summary, printed


def test_produce_on_sigint_settles_what_it_sent_and_prints_the_summary(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    """kcat prints nothing when interrupted; ours stops sending, settles the sends already
    admitted and prints its summary (``interrupted``), exit 130: every message it counts as
    sent is stored."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_actors", "--log-level", "info", "produce",
         "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--count", "1000000",
         "--rate", "200", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # its own log says when the producer has started
        if "producer.started" in line:
            break
    else:
        raise AssertionError(f"produce exited early: {proc.wait()}")
    peek = ("peek", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--json")
    for _ in range(60):  # until the broker has stored some of its messages
        if cli(*peek, "--count", "1").stdout.strip():
            break
    else:
        raise AssertionError("nothing was stored")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["interrupted"] == "SIGINT" and result["failed"] == 0 and result["sent"] > 0
    assert len(cli(*peek, "--count", "1000000").stdout.splitlines()) == result["sent"]


def test_produce_stdin_with_a_key_delimiter_keys_each_line(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    """kcat -K: each line is KEY, delimiter, BODY; a line without the delimiter has no key."""
    proc = cli("produce", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--stdin",
               "-K", ":", "--json", stdin="k1:one\nno key\nk2:two:three\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["sent"] == 3
    lines = cli("peek", "--namesrv", rocketmq_namesrv, "--topic", unique_topic, "--json")
    got = sorted((r["body"], r["keys"]) for r in map(json.loads, lines.stdout.splitlines()))
    assert got == [("no key", []), ("one", ["k1"]), ("two:three", ["k2"])]
    # and back out as kcat -f prints them
    formatted = cli("peek", "--namesrv", rocketmq_namesrv, "--topic", unique_topic,
                    "--format", "%k|%s\\n")  # fmt: skip
    assert formatted.returncode == 0, formatted.stderr
    assert sorted(formatted.stdout.splitlines()) == ["k1|one", "k2|two:three", "|no key"]
