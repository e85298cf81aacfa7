"""achieved.fastest_runs_s with ``rewarm_s``: a timed run finds the caches as its own session's
runs left them, not as the other session's run did."""

from __future__ import annotations

from onnxroof.measure.achieved import fastest_runs_s


class Clock:
    """A tick counter: every call to the timer and every unit of a run's cost is one tick."""

    def __init__(self) -> None:
        self.now = 0
        self.last_session = None
        self.streak = 0  # runs of the last session in a row

    def timer(self) -> float:
        self.now += 1
        return float(self.now)


class CachedSession:
    """A run costs 5 ticks right after another session's run, 3 after one run of its own, 1 after
    two or more (its caches refilled over two runs)."""

    COSTS = (5, 3, 1)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def run(self, outputs, feeds) -> None:
        clock = self.clock
        clock.streak = clock.streak + 1 if clock.last_session is self else 0
        clock.now += self.COSTS[min(clock.streak, 2)]
        clock.last_session = self


def timed(rewarm_s: float) -> list[float]:
    clock = Clock()
    # budget 0: three rounds of turns, a batch of one run each (5e-3 over the 2+ ticks of a run is under 1)
    return fastest_runs_s(
        [(CachedSession(clock), {}), (CachedSession(clock), {})], 0.0, timer=clock.timer, rewarm_s=rewarm_s
    )


def test_turns_without_rewarm_time_each_run_after_the_other_sessions():
    # every timed run follows the other session's: 5 ticks, plus the timer's own tick = 6
    assert timed(0.0) == [6.0, 6.0]


def test_a_short_rewarm_is_one_untimed_run():
    # rewarm: timer (t0 + 1), run 5 -> the timer reads 6 ticks on: over 1, stop; the timed run is
    # one after its own: 3 + 1 = 4
    assert timed(1.0) == [4.0, 4.0]


def test_a_longer_rewarm_runs_until_the_caches_are_its_own():
    # rewarm 7: the first run reads 6 (< 7), a second run costs 3 -> 10 (>= 7), stop; the timed run
    # comes after two of its own: 1 + 1 = 2
    assert timed(7.0) == [2.0, 2.0]
