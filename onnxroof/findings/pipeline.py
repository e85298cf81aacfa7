"""A layer pipeline (a dataflow chip such as Hailo, roofline/dataflow.py): its frame rate is set
by its slowest stage, or by reloading its contexts when the parameters need several. Two findings:
the stage that takes the most of the chip's work (its gain measured by re-timing the pipeline with
that layer's work halved: fewer channels, a stride), and the contexts reloaded every frame (their
gain measured by analysing the model again at a larger batch, which loads each context once per
group of frames). The per-kernel roofline findings do not apply to such a chip: its time is its
stages', not its kernels' (:data:`PIPELINE_SKIPS`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import iec, rate, seconds
from ..roofline.dataflow import retimed
from .records import Finding
from .variants import Variants
from .wording import fewer_parameter_bytes

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

# the finders whose advice is about kernels on a roofline (their bytes, launches, fusion, spills,
# parameters read per kernel): a layer pipeline's time is its stages'
PIPELINE_SKIPS = frozenset({"intensity", "largest", "fusion", "spill", "weights", "launch"})
MIN_SHARE = 0.10  # a stage with less of the chip's work is not worth naming
SHRINK = 0.5  # the what-if: the stage's work halved
MIN_GAIN = 0.02  # of the frame time
BATCH_FACTOR = 8  # the larger batch the contexts finding analyses


def stage(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """The slowest stage (or, where the link, the contexts or the peak set the frame rate, the
    heaviest), its share of the chip's work and the frame rate at half its work (re-timed)."""
    timing = report.dataflow
    if timing is None or not timing.frames_per_s or not timing.heaviest:
        return []
    name = timing.limiting if timing.stage_limited else timing.heaviest
    share = timing.work_share(name)
    if share < MIN_SHARE:
        return []
    op = next((k.op_type for k in report.nodes if k.name == name), "")
    after = retimed(timing, name, SHRINK)
    base_s, new_s = 1 / timing.frames_per_s, 1 / after.frames_per_s if after.frames_per_s else 0.0
    which = "slowest" if timing.stage_limited else "heaviest"
    title = (
        f"{name}{f' ({op})' if op else ''} is the pipeline's {which} stage: {share:.0%} of the chip's work per frame"
    )
    gain = base_s - new_s if new_s and base_s - new_s >= MIN_GAIN * base_s else 0.0
    rates = f"{rate(after.frames_per_s)} frames/s instead of {rate(timing.frames_per_s)}"
    if gain:
        title += f"; at half its work, {rates}"
        detail = (
            f"re-timed with {name}'s work halved (half its output channels, or a stride where the resolution "
            f"allows): {rates}"
            + (f", now set by {after.limit_words()}" if after.limiting != timing.limiting else "")
            + f"; the stage takes {seconds(timing.stage_of(name))} a frame"
        )
    else:
        detail = (
            f"halving its work gives {rates}: the frame rate is set by {timing.limit_words()}, "
            "which shrinking this stage does not change"
        )
    return [
        Finding(
            "stage",
            report.target.name,
            title,
            detail,
            nodes=next((tuple(k.nodes) for k in report.nodes if k.name == name), (name,)),
            gain_s=gain,
            latency_s=base_s,
            evidence={
                "stage": name,
                "work_share": share,
                "limiting": timing.limiting,
                "frames_per_s": timing.frames_per_s,
                "frames_per_s_at_half_work": after.frames_per_s,
            },
        )
    ]


def contexts(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """Parameters that need several contexts, reloaded over the host link for every group of
    frames, and the frame rate at ``BATCH_FACTOR`` times the batch (analysed again)."""
    timing = report.dataflow
    if timing is None or len(timing.contexts) < 2 or not timing.frames_per_s or timing.chip is None:
        return []
    count, held = len(timing.contexts), sum(c.weight_bytes for c in timing.contexts)
    title = (
        f"the model needs {count} contexts ({iec(held)} of parameters, {iec(int(timing.chip.context_bytes.value))} "
        f"a context): every {'frame' if timing.group == 1 else f'group of {timing.group} frames'} reloads them "
        "over the host link"
    )
    base_s = 1 / timing.frames_per_s
    evidence: dict = {"contexts": count, "parameter_bytes": held, "frames_per_s": timing.frames_per_s}
    larger = report.batch * BATCH_FACTOR
    fixed = analysis.fixed_batch.refusal(larger) if analysis.fixed_batch else None
    other = fixed or variants.report(report.target, batch=larger)
    if isinstance(other, str) or other.dataflow is None or not other.dataflow.frames_per_s:
        why = other if isinstance(other, str) else f"batch {larger} gives no frame rate"
        detail = f"a larger batch is not measured: {why}; {fewer_parameter_bytes(analysis)} needs fewer"
        return [Finding("contexts", report.target.name, title, detail, latency_s=base_s, evidence=evidence)]
    new_s = 1 / other.dataflow.frames_per_s
    evidence |= {"larger_batch": larger, "larger_batch_frames_per_s": other.dataflow.frames_per_s}
    detail = (
        f"at batch {larger} each context is loaded once per {larger} frames: {rate(other.dataflow.frames_per_s)} "
        f"frames/s against {rate(timing.frames_per_s)} (a frame's latency grows: the batch's last frame waits for it); "
        f"{fewer_parameter_bytes(analysis)} needs fewer contexts"
    )
    gain = base_s - new_s if base_s - new_s >= MIN_GAIN * base_s else 0.0
    return [
        Finding(
            "contexts",
            report.target.name,
            title + (f": batch {larger} loads them once per {larger} frames" if gain else ""),
            detail,
            gain_s=gain,
            latency_s=base_s,
            change=f"--batch {larger}" if gain else "",
            evidence=evidence,
        )
    ]
