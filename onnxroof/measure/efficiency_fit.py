"""The fitter of a target's achieved efficiencies and launch cost: the one the bundled targets are
fitted with on published measurements (``benchmarks/fit_efficiency.py``) and ``onnxroof
calibrate --from-trace`` on a user's own traces (:mod:`onnxroof.measure.trace_fit`).

A kernel's predicted time is its slowest roof over the efficiency of its class, plus one launch
(``placement.roofline``). A measured figure (a published row, or a group of a trace's kernels) is
therefore linear in three unknowns once it is taken apart (:class:`FitRow`): the seconds its
kernels spend at the roofs in GEMM-class kernels and in streaming kernels (every other class:
``STREAMING``), the seconds of kernels of no class, and the number of launches. The fit is a grid
search minimising the squared log error over the rows (:func:`fit`): per target the GEMM
efficiency and launch cost, and one streaming efficiency for every target of the runtime.

Held out (:func:`held_out`): each row is also predicted by a fit that never saw its group (a
model family, a trace's model); a target's error band is the largest of those errors over its
rows. Rows can be fitted and held out only if leaving any one group out leaves at least
``MIN_ROWS`` rows (:func:`fittable`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# the efficiency classes fitted as one streaming figure (every class but gemm)
STREAMING = ("gemv", "depthwise", "elementwise", "reduction", "data_movement", "transpose")
MIN_ROWS = 4
EFFICIENCY_GRID = np.geomspace(0.05, 1.0, 61)
# Published rows' streaming kernels take 1-9 % of their time at the roofs, too little to pin their
# efficiency: anywhere from 0.05 to 1 the fit's median error moves by a point or two. Searched from
# 0.5 up there, so that no figure below what bandwidth-bound kernels reach is extrapolated to the
# kernels no row has (a batch-1 decode streaming its weights). A trace times its streaming kernels
# apart, so its fit searches the whole grid.
STREAMING_GRID = EFFICIENCY_GRID[EFFICIENCY_GRID >= 0.5]
LAUNCH_GRID_S = np.concatenate([[0.0], np.geomspace(0.2e-6, 40e-6, 48)])
DEFAULT_LAUNCH_S = 3e-6  # the earlier estimate, when no row's launches weigh
LAUNCH_WEIGHS = 0.1  # a target fits its own launch cost when its launches take this share of some row


@dataclass
class FitRow:
    """One measured figure taken apart: the seconds its prediction spends at the roofs in
    GEMM-class kernels, in streaming kernels and in kernels of no class, and its launches.
    ``measured`` is seconds, or a rate when ``rate`` is given (then the figure is ``rate`` over
    the predicted seconds: a throughput)."""

    target: str
    group: str  # what the held-out fit leaves out: a model family, a trace's model
    measured: float
    gemm_s: float = 0.0
    streaming_s: float = 0.0
    other_s: float = 0.0  # kernels of no class: at the roof, whatever the fit
    launches: float = 0.0
    rate: float | None = None
    # the row's weight in the fit's squared log error: 1 for a published figure; a trace's group of
    # kernels weighs its share of the model's time, so each model weighs 1 and a group of one 3 µs
    # kernel does not pull the launch cost as a whole model does
    weight: float = 1.0

    def predict(self, gemm, streaming, launch_s):
        """The row's figure with these efficiencies and launch cost (numbers or numpy arrays)."""
        total = self.gemm_s / gemm + self.streaming_s / streaming + self.other_s + self.launches * launch_s
        return total if self.rate is None else self.rate / total

    def error(self, figures: tuple[float, float, float]) -> float:
        """predicted / measured - 1 with ``figures`` (gemm, streaming, launch seconds)."""
        return float(self.predict(*figures) / self.measured - 1)

    @property
    def launch_share(self) -> float:
        """The share of the row's time at the roofs its launches take at DEFAULT_LAUNCH_S."""
        peak = self.gemm_s + self.streaming_s + self.other_s
        launches = self.launches * DEFAULT_LAUNCH_S
        return launches / (peak + launches) if peak + launches else 0.0


@dataclass
class Fit:
    gemm: dict[str, float]  # target -> the fraction of the roofline its GEMM-class kernels reach
    streaming: float  # the runtime's, for every target: the fraction its streaming kernels reach
    launch_s: dict[str, float]  # target -> seconds per launch
    rows: list
    shared_launch: set[str] = field(default_factory=set)  # targets given the others' median launch cost

    def figures(self, target: str) -> tuple[float, float, float]:
        gemm = self.gemm.get(target, statistics.median(self.gemm.values()))
        launch = self.launch_s.get(target, statistics.median(self.launch_s.values()))
        return gemm, self.streaming, launch


def fit(
    rows: Sequence[FitRow], streaming_grid: np.ndarray = STREAMING_GRID, default_launch_s: float = DEFAULT_LAUNCH_S
) -> Fit:
    """The figures minimising the squared log error over ``rows``, searched on a grid: each
    target's GEMM efficiency (its clocks, power limit and kernels differ), the runtime's streaming
    efficiency (one for all its targets, on ``streaming_grid``) and each target's launch cost. A
    target has its own launch cost when its launches take at least LAUNCH_WEIGHS of some row's time
    at peak (batch-1 rows); the others take the median of those (``default_launch_s`` when none
    has)."""
    grid = (EFFICIENCY_GRID[:, None, None], streaming_grid[None, :, None], LAUNCH_GRID_S[None, None, :])
    targets = sorted({r.target for r in rows})
    own = [t for t in targets if any(r.launch_share >= LAUNCH_WEIGHS for r in rows if r.target == t)]
    shared = [t for t in targets if t not in own]

    def loss(t: str, launch=None) -> np.ndarray:
        """[gemm, streaming, launch] (or [gemm, streaming] at the given launch costs [streaming])."""
        g, st, lc = grid if launch is None else (EFFICIENCY_GRID[:, None], streaming_grid[None, :], launch[None, :])
        with np.errstate(divide="ignore"):  # a row of launches alone predicts 0 at no launch cost: log 0, never chosen
            return sum(r.weight * np.log(r.predict(g, st, lc) / r.measured) ** 2 for r in rows if r.target == t)

    total = np.zeros(len(streaming_grid))  # over the streaming efficiency
    choice: dict[str, tuple] = {}  # target -> (gemm index, launch index) per streaming
    for t in own:
        per = loss(t)  # [g, s, l]
        flat = per.transpose(1, 0, 2).reshape(len(streaming_grid), -1)  # [s, g x l]
        best = np.argmin(flat, axis=1)
        choice[t] = np.unravel_index(best, per.shape[::2])
        total += flat[np.arange(len(best)), best]
    launch_at = (
        np.median(np.stack([LAUNCH_GRID_S[k] for _, k in choice.values()]), axis=0)
        if choice
        else np.full(len(streaming_grid), default_launch_s)
    )
    for t in shared:
        per = loss(t, launch_at)  # [g, s]
        choice[t] = (np.argmin(per, axis=0), None)
        total += np.min(per, axis=0)
    j = int(np.argmin(total))
    gemm = {t: float(EFFICIENCY_GRID[g[j]]) for t, (g, _) in choice.items()}
    launch_s = {t: float(LAUNCH_GRID_S[k[j]]) for t, (_, k) in choice.items() if k is not None}
    launch_s.update({t: float(launch_at[j]) for t in shared})
    return Fit(gemm, float(streaming_grid[j]), launch_s, list(rows), set(shared))


def fittable(rows: Sequence[FitRow]) -> str:
    """Why ``rows`` cannot be fitted and held out ('' when they can): leaving any one group out
    must leave at least MIN_ROWS rows of at least one other group."""
    groups = {r.group for r in rows}
    if len(groups) < 2:
        return f"{len(rows)} comparable row(s) of one model family: nothing to hold out"
    thin = [g for g in sorted(groups) if sum(r.group != g for r in rows) < MIN_ROWS]
    if thin:
        return f"{len(rows)} comparable rows; leaving out {', '.join(thin)} leaves fewer than {MIN_ROWS} to fit on"
    return ""


def held_out(rows: Sequence[FitRow], **options) -> dict[int, float]:
    """Each row's error (by ``id``) from a fit on the rows of the other groups (``options``: :func:`fit`'s)."""
    errors: dict[int, float] = {}
    for group in sorted({r.group for r in rows}):
        result = fit([r for r in rows if r.group != group], **options)
        for r in rows:
            if r.group == group:
                errors[id(r)] = r.error(result.figures(r.target))
    return errors
