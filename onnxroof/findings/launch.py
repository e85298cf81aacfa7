"""Launch-bound: the target's fixed cost per kernel takes much of the time. The gain of a larger
batch is measured by analysing the model again at that batch (the launches are paid once per run,
the work grows with the batch).

A chain of 100 Adds, each its own kernel, on a target with a 3 µs launch: 300 µs of launches per
run. At batch 8 the launches are the same 300 µs and the work is 8 times as much, so one
inference takes 300 / 8 µs of launch instead of 300: 262.5 µs less, whatever the work.

"Batch up" is advised only where the re-analysis at the larger batch is valid and shows the gain:
an export that fixes its batch in its shape constants (frontend/fixed_batch.py) is told to
re-export; a larger batch that analyses incompletely, or takes as long per inference, gives no
gain and says why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import seconds
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

LAUNCH_SHARE = 0.25  # launches at least this share of the latency: a finding
BATCH_FACTOR = 8  # the larger batch analysed: 8 times the current; its gain is the finding's
FURTHER_FACTOR = 64  # and one more, for the throughput it tends to
# Up to this many nodes the further batch is analysed too: a tenth of what the findings may analyse
# again (variants.REANALYSE_NODES). It is evidence the finding does not rest on, taken only where
# it leaves that budget to the gains of the findings after this one.
FURTHER_NODES = 1_000
MIN_GAIN = 0.05  # a larger batch saving less of the time per inference is no advice


def launch(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """The kernels x the launch cost against the work, and the latency and throughput at
    ``BATCH_FACTOR`` times the batch (re-analysed)."""
    launched = [k for k in report.nodes if k.placement.overhead_s]
    launch_s = sum(k.placement.overhead_s for k in launched)
    if not report.latency_s or launch_s < LAUNCH_SHARE * report.latency_s:
        return []
    share = launch_s / report.latency_s
    kernels = f"{len(launched):,} kernel{'' if len(launched) == 1 else 's'}"
    head = (
        f"{kernels} x {seconds(launch_s / len(launched))} of launch {'is' if len(launched) == 1 else 'are'} "
        f"{share:.0%} of the time"
    )
    evidence = {"kernels": len(launched), "launch_s": launch_s, "launch_share": share, "batch": report.batch}
    base_s = per_inference_s(report)
    larger = report.batch * BATCH_FACTOR

    def no_batch_gain(why: str, title: str = "fuse kernels") -> list[Finding]:
        return [Finding("launch", report.target.name, f"{head}: {title}", why, latency_s=base_s, evidence=evidence)]

    cut = report.edge_tpu_cut
    if cut is not None and cut.host_launch_s >= launch_s / 2:  # an Edge TPU's graph cut: the launches are the host's
        return no_batch_gain(
            f"most of the launches are {cut.host}'s: {cut.words()}; a larger batch would save the host's launches, "
            "not this target's",
            f"map the ops at the graph cut (the fallback finding), or fuse kernels on {cut.host}",
        )
    fixed = analysis.fixed_batch.refusal(larger) if analysis.fixed_batch else None
    if fixed:
        return no_batch_gain(
            f"a larger batch is not measured: {fixed}", "fuse kernels, or re-export with a dynamic batch and batch up"
        )
    other = variants.report(report.target, batch=larger)
    if isinstance(other, str):
        return no_batch_gain(f"batch {larger} gives no measured gain: {other}")
    if _host_kernels(other) > _host_kernels(report):  # an Edge TPU's compiler cuts the larger batch earlier
        larger_cut = other.edge_tpu_cut
        assert larger_cut is not None
        return no_batch_gain(
            f"a larger batch is not advised: at batch {larger} {larger_cut.words()}, so its gain would be the host's, "
            "not this target's"
        )
    new_s = per_inference_s(other)
    speedup = base_s / new_s if new_s else 0.0
    evidence |= {
        "larger_batch": larger,
        "larger_batch_latency_s": other.latency_s,
        "throughput_per_s": report.throughput_per_s,
        "larger_batch_throughput_per_s": other.throughput_per_s,
    }
    detail = (
        f"at batch {larger} one run takes {seconds(other.latency_s)} ({seconds(report.latency_s)} at batch "
        f"{report.batch}): {speedup:.1f}x the throughput, {seconds(new_s)} per inference"
    )
    if base_s - new_s < MIN_GAIN * base_s:  # its own evidence shows no gain: no "batch up"
        return no_batch_gain(detail + "; a larger batch does not pay here")
    furthest = report.batch * FURTHER_FACTOR
    further = variants.report(report.target, batch=furthest) if len(analysis.nodes) <= FURTHER_NODES else None
    if further is not None and not isinstance(further, str):
        evidence |= {
            "further_batch": furthest,
            "further_batch_latency_s": further.latency_s,
            "further_batch_throughput_per_s": further.throughput_per_s,
        }
        detail += (
            f"; at batch {furthest}, {seconds(further.latency_s)} per run, "
            f"{further.throughput_per_s / report.throughput_per_s:.1f}x the throughput"
        )
    detail += "; fusing kernels pays fewer launches at any batch"
    return [
        Finding(
            "launch",
            report.target.name,
            f"{head}: batch up, or fuse",
            detail,
            gain_s=base_s - new_s,
            latency_s=base_s,
            change=f"--batch {larger}",
            evidence=evidence,
        )
    ]


def _host_kernels(report: TargetReport) -> int:
    """The kernels the host runs past an Edge TPU's cut (0: the target runs them all)."""
    return report.edge_tpu_cut.host_kernels if report.edge_tpu_cut is not None else 0
