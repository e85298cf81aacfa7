"""achieved.fastest_runs_s with ``rewarm``: a timed run finds the caches as its own session left them."""

from __future__ import annotations

from onnxroof.measure.achieved import fastest_runs_s


class Clock:
    """A tick counter: every call to the timer and every unit of a run's cost is one tick."""

    def __init__(self) -> None:
        self.now = 0
        self.last_session = None

    def timer(self) -> float:
        self.now += 1
        return float(self.now)


class CachedSession:
    """A run costs ``warm`` ticks when the run before it was this session's own, else ``cold``
    (the other session's run evicted its weights)."""

    def __init__(self, clock: Clock, warm: int, cold: int) -> None:
        self.clock, self.warm, self.cold = clock, warm, cold

    def run(self, outputs, feeds) -> None:
        self.clock.now += self.warm if self.clock.last_session is self else self.cold
        self.clock.last_session = self


def sessions(clock: Clock) -> list:
    return [(CachedSession(clock, warm=1, cold=5), {}), (CachedSession(clock, warm=1, cold=5), {})]


def test_turns_without_rewarm_time_each_run_after_the_other_sessions():
    # budget 0: three rounds of turns; a batch of one run each (5 ms over a handful of ticks is
    # over 1, but the ticks are seconds here: int(5e-3 / 2) = 0 -> 1). Each timed run follows the
    # other session's run: cold, 5 ticks, plus the timer's own tick between start and end = 6
    clock = Clock()
    assert fastest_runs_s(sessions(clock), 0.0, timer=clock.timer) == [6.0, 6.0]


def test_rewarm_times_each_run_after_its_own():
    # each turn's untimed run takes the cold cost; the timed one after it is warm: 1 + 1 tick = 2
    clock = Clock()
    assert fastest_runs_s(sessions(clock), 0.0, timer=clock.timer, rewarm=True) == [2.0, 2.0]
