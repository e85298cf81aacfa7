"""The text summary's "Several devices" section (``--devices N``): per target, the tensor-parallel
structure found, a row per (TP, PP) split with its memory and time per device, and the answer in
words (:func:`onnxroof.roofline.devices.plan_sentences`)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from ...core.text import printable
from ...core.units import iec, seconds
from ...roofline.devices import plan_sentences

if TYPE_CHECKING:
    from ...roofline.devices import DevicePlan

COLUMNS = 120
HEADER = (
    "TP",
    "PP",
    "weights",
    "KV cache",
    "activations",
    "need",
    "fits",
    "step",
    "all-reduce",
    "sends",
    "bubble",
    "per s",
)


def structure_line(plan: DevicePlan) -> str:
    """What tensor parallelism splits, from the graph."""
    if not plan.recognised:
        return "tensor parallelism: no attention or MLP block found: every node replicated"
    replicated = f"{plan.replicated_nodes:,} node{'' if plan.replicated_nodes == 1 else 's'}"
    return (
        f"tensor parallelism: {plan.attention_blocks} attention and {plan.mlp_blocks} MLP blocks split (first "
        f"projections by columns, second by rows, then an all-reduce); {replicated} replicated"
    )


def device_plan_lines(plan: DevicePlan) -> list[str]:
    link = f", linked by {printable(plan.link)}" if plan.link else ""
    lines = [
        f"Several devices on {printable(plan.target)} (up to {plan.devices}{link}; the kernels' time a "
        f"{plan.latency_kind}, the links at their stated figures: a bound)",
        f"  {structure_line(plan)}",
    ]
    rows = [HEADER] + [
        (
            str(c.tensor),
            str(c.pipeline),
            iec(c.weight_bytes),
            iec(c.kv_cache_bytes),
            iec(c.activation_bytes),
            iec(c.need_bytes),
            {True: "yes", False: "no", None: "?"}[c.fits],
            seconds(c.latency_s),
            seconds(c.collective_s),
            seconds(c.transfer_s),
            f"{c.bubble:.0%}",
            f"{c.per_s:,.1f}",
        )
        for c in plan.choices
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    for row in rows:
        lines.append("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
    unit = plan.per_step_unit
    micro = plan.choices[0].micro_batches if plan.choices else 1
    per_step = plan.choices[0].per_step if plan.choices else 1
    # per s is not 1 / step: with PP stages, m micro-batches take (m + PP - 1) periods of the slowest stage
    lines += textwrap.wrap(
        f"(per device; activations other than the KV cache whole: an upper bound; per s: {unit} a second with "
        f"{micro} micro-batch{'es' if micro > 1 else ''} in flight, = {micro} x {per_step:,} {unit} / (({micro} + PP - "
        f"1) x the slowest stage's time): the stages take turns, so at PP > 1 it is not 1 / step; bubble: the share "
        "of that time a stage idles)",
        COLUMNS,
        initial_indent="  ",
        subsequent_indent="   ",
    )
    for sentence in plan_sentences(plan):
        lines += textwrap.wrap(sentence, COLUMNS, initial_indent="  ", subsequent_indent="    ")
    for degree, reason in sorted(plan.refused.items()):
        lines.append(f"  not offered on {degree} devices: {printable(reason)}")
    for note in plan.notes:
        lines += textwrap.wrap(f"! {printable(note)}", COLUMNS, initial_indent="  ", subsequent_indent="    ")
    return lines
