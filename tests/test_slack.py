"""tests/slack.py: the slack of a timing bound follows the scheduling delay measured meanwhile."""

from __future__ import annotations

import time

from tests.slack import SchedulingProbe, delay_since, slack


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_late_wake_up_counts_only_for_bounds_that_began_before_it() -> None:
    clock = Clock()
    probe = SchedulingProbe(period=0.01, clock=clock)
    for _ in range(10):  # on time
        clock.now += 0.01
        probe.tick()
    assert probe.delay_since(0.0) == 0.0
    before_stall = clock.now
    clock.now += 0.01 + 0.4  # woke 0.4 s late
    probe.tick()
    after_stall = clock.now
    for _ in range(10):
        clock.now += 0.01
        probe.tick()
    assert abs(probe.delay_since(before_stall) - 0.4) < 1e-9
    assert probe.delay_since(after_stall + 0.001) == 0.0


def test_a_wake_up_overdue_now_counts_before_it_happens() -> None:
    clock = Clock()
    probe = SchedulingProbe(period=0.01, clock=clock)
    clock.now += 0.01
    probe.tick()
    clock.now += 1.0  # the probe has not woken for a second: the machine is that busy
    assert abs(probe.delay_since(clock.now - 0.5) - 0.99) < 1e-9


def test_slack_is_the_floor_on_a_quiet_machine_and_grows_with_the_delay() -> None:
    began = time.monotonic()
    time.sleep(0.05)  # (the real probe, running: a few wake-ups)
    measured = delay_since(began)
    assert slack(began, wakeups=5, floor=0.3) >= 0.3 + 5 * measured - 1e-9
    assert slack(began, wakeups=5, floor=0.3) < 0.3 + 5 * (measured + 1.0)
