"""Progress reporting of long CLI work: rich bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io

from rocketmq_actors.cli.progress import ProgressReport


def test_rich_bar_on_a_terminal_shows_done_of_total() -> None:
    stream = io.StringIO()
    with ProgressReport("sent", total=10, stream=stream, force_terminal=True) as bar:
        for _ in range(10):
            bar.advance()
    out = stream.getvalue()
    assert "sent" in out and "10/10" in out and "100%" in out
    assert "\x1b[" in out  # drawn with terminal control codes, not plain lines


def test_plain_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with ProgressReport(
        "received", total=None, stream=stream, force_terminal=False, every=3
    ) as bar:
        bar.advance(2)
        bar.advance(2)  # crosses 3
        bar.advance(3)  # crosses 6
    lines = stream.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == ["received 4", "received 7"]
    assert "\x1b[" not in stream.getvalue()


def test_disabled_progress_writes_nothing_but_still_counts() -> None:
    stream = io.StringIO()
    with ProgressReport("sent", total=5, enabled=False, stream=stream, force_terminal=True) as bar:
        bar.advance(5)
    assert stream.getvalue() == ""
    assert bar.done == 5
