"""Lengths the graph bounds (issue 47): a positional table has so many rows, and a Gather that
reads a row past them is no run the model can make (Whisper's decoder has 448 positions; at
--context 2048 its Gather reads row 2047). Found where the index values are known (a decode
step's position, shape arithmetic on the bound dims), refused with the bound named."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from ..core.errors import OptionError
from ..core.nodes import NodeFields
from ..core.text import printable


class PastTheTable(OptionError):
    """A length past the rows of a table the graph reads it from (the formulas stop there)."""


def check_table_rows(
    model: onnx.ModelProto, fields: Sequence[NodeFields], values: dict[str, np.ndarray], phase: str | None
) -> None:
    """Raise when a Gather of a stored table reads known rows past its end (or before its start,
    past the negative indices): the option that sets the length (``phase``'s), or the dims.
    ``fields`` are the main graph's nodes' (read once: a protobuf field read per node is slow)."""
    tables = {t.name: list(t.dims) for t in model.graph.initializer}
    for node in fields:
        if node.op_type != "Gather" or len(node.inputs) < 2 or node.inputs[0] not in tables:
            continue
        indices = values.get(node.inputs[1])
        axis = next((a.i for a in node.attributes if a.name == "axis"), 0)
        shape = tables[node.inputs[0]]
        if indices is None or not np.size(indices) or not -len(shape) <= axis < len(shape):
            continue
        rows = shape[axis]
        beyond = int(np.max(indices)) if np.max(indices) >= rows else int(np.min(indices))
        if -rows <= beyond < rows:
            continue
        where = (
            f"node {printable(node.name or node.outputs[0])} reads row {beyond:,} of the {rows:,}-row table "
            f"{printable(node.inputs[0])}: the graph bounds this length at {rows:,}"
        )
        if phase == "decode":
            raise PastTheTable(
                "context", "{opt.context}: {where}; give {opt.context} {rows} or less", where=where, rows=rows
            )
        if phase == "prefill":
            raise PastTheTable("seq", "{opt.seq}: {where}; give {opt.seq} {rows} or less", where=where, rows=rows)
        raise PastTheTable(
            "dims", "the input sizes are past what the model allows: {where}; give {opt.dims} within it", where=where
        )
