"""`summary --by module` and `--by op`: the module tree (or the op types) as a terminal table,
each module's line the sum of the nodes below it; repeated blocks (``layer.0`` ... ``layer.11``,
alike) shown once with their count. The tree itself is :mod:`onnxroof.compare.modules`'."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compare.modules import ModuleCost, folded_note, has_scopes, module_tree, op_breakdown, shown_rows
from ...core.units import iec, seconds, si
from .table import TERMINAL_COLUMNS, clip, printable

if TYPE_CHECKING:
    from ...result import Analysis


def by_module_lines(analysis: Analysis, depth: int | None = None) -> list[str]:
    """The module tree, or the op types with a note when the node names carry no scopes."""
    if not has_scopes(analysis):
        return [
            "By op type (the node names carry no module scopes, such as /encoder/layer.0/...)",
            *_rows(analysis, [(entry, 1, entry.name, 0) for entry in op_breakdown(analysis)]),
        ]
    root = module_tree(analysis, depth)
    title = (
        "By module (from the node names"
        + (f"; {depth} level(s) deep" if depth is not None else "")
        + "; a block repeated alike is shown once: its count, then one block's figures"
        + (f"; {note}" if (note := folded_note(root)) else "")
        + ")"
    )
    return [title, *_rows(analysis, shown_rows(root))]


def by_op_lines(analysis: Analysis) -> list[str]:
    return ["By op type", *_rows(analysis, [(entry, 1, entry.name, 0) for entry in op_breakdown(analysis)])]


def _rows(analysis: Analysis, rows: list[tuple[ModuleCost, int, str, int]]) -> list[str]:
    targets = [report.target.name for report in analysis.targets]
    header = [
        "module",
        "x",
        "nodes",
        "MACs",
        "FLOPs",
        "params",
        "weights",
        "activations",
        "peak",
        *(f"time [{t}]" for t in targets),
    ]
    cells = [header]
    for module, count, label, level in rows:
        cells.append(
            [
                "  " * level + printable(label),
                f"x{count}" if count > 1 else "",
                f"{module.nodes:,}",
                si(module.macs),
                si(module.flops),
                si(module.params),
                iec(module.weight_bytes),
                iec(module.activation_bytes),
                iec(module.peak_bytes),
                *(seconds(module.time_s.get(t, 0.0)) for t in targets),
            ]
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    spare = TERMINAL_COLUMNS - (sum(widths) + 2 * (len(widths) - 1))
    if spare < 0:  # the names give way (middle-clipped), down to 24 characters
        widths[0] = max(24, widths[0] + spare)
        for row in cells[1:]:
            row[0] = clip(row[0], widths[0]) if len(row[0]) > widths[0] else row[0]
    return [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in cells
    ]
