"""The target file's fields, declared once (schema ``onnxroof-target/1``; ``targets.py`` says
what each means at length): :data:`FIELDS`, one row per field, gives its TOML path, the
:class:`~onnxroof.roofline.targets.Target` attribute it fills, its unit, whether it is required,
a line of documentation, the reader that validates it and what the JSON document's target entry
shows of it. Parsing (:func:`read_fields`), the JSON entry (:func:`target_json`), the README's
table (:func:`field_table_markdown`) and the calibrate writer's section names
(:func:`section_header`) read it.

Adding a target field: a row here (and its attribute on ``Target``), then the term or stage that
uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from .dataflow import read_dataflow
from .edge_tpu import read_edge_tpu
from .figures import read_efficiency, read_figure, read_fraction, read_section, shown
from .fusion_rules import FUSION_RULES  # the names a [fusion] policy may give
from .interconnect import read_interconnect

if TYPE_CHECKING:
    from .figures import Figure

# a targets.Target (not imported: targets.py reads its fields through this module)
Target = Any

SCHEMA = "onnxroof-target/1"
# the roofs a target may give; tf32 is no ONNX type: a runtime runs float32 products on it where
# the target's [fp32_math] says so (TensorRT's TF32 tensor cores)
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
FP32_MATH_ROOFS = ("fp32", "tf32")
PARALLEL_KINDS = ("tiles", "systolic")

# The kernel classes a target's [efficiency] may name; kernels.efficiency_class assigns them.
# 32 multiply-adds per output element: a 3x3 depthwise conv has 9, a 3-channel 3x3 conv 27, a
# dense 3x3 conv over 16 channels 144; below it a kernel reuses too little of what it loads to
# run at the GEMM rate.
LOW_REUSE_MACS_PER_OUTPUT = 32
# 8 multiply-adds per weight element: a matmul over fewer than 8 rows (decode, a batch-1 MLP)
# streams its weights, bound by memory whatever the peak
LOW_REUSE_MACS_PER_WEIGHT = 8
EFFICIENCY_CLASSES = {
    "gemm": f"convolutions and matmuls with at least {LOW_REUSE_MACS_PER_OUTPUT} multiply-adds per output element",
    "gemv": f"matmuls and convolutions with fewer than {LOW_REUSE_MACS_PER_WEIGHT} multiply-adds per weight element "
    "(matrix-vector products: decode steps, batch-1 MLPs): they stream their weights",
    "depthwise": "convolutions and matmuls with fewer (depthwise, few input channels): little reuse",
    "elementwise": "elementwise kernels: activations, arithmetic, casts, quantize/dequantize",
    "reduction": "reductions, normalizations, softmax and pooling",
    "data_movement": "contiguous copies: concatenations, gathers, slices, splits, pads, resizes",
    "transpose": "strided copies: transposes, depth-to-space and space-to-depth",
}

Reader = Callable[[dict, str], dict]  # (the file's tables, its path) -> Target keywords


@dataclass(frozen=True)
class Parallel:
    """A target's parallel compute units and the tile of work each takes per step (per roof)."""

    kind: str  # PARALLEL_KINDS: "tiles" (output rows x columns) or "systolic" (reduction depth x output channels)
    units: Figure
    tile_rows: dict[str, Figure]  # roof -> rows of a tile (systolic: the array's height)
    tile_cols: dict[str, Figure]  # roof -> columns of a tile (systolic: the array's width)

    def tile(self, roof: str) -> tuple[int, int] | None:
        """(rows, columns) of the tile on ``roof``; None: work on that roof is not limited."""
        if roof in self.tile_rows and roof in self.tile_cols:
            return int(self.tile_rows[roof].value), int(self.tile_cols[roof].value)
        return None


@dataclass(frozen=True)
class TargetField:
    """One field of a target file."""

    path: str  # its TOML path; "<dtype>" stands for each roof of DTYPES, "[name]" for a table of several keys
    attribute: str  # the Target attribute it fills (a table's reader may fill more: ``also``)
    unit: str
    required: bool
    doc: str
    read: Reader
    json: Callable[[Target], dict] | None = None  # what the JSON target entry shows of it (result.entries.target_entry)
    also: tuple[str, ...] = ()  # the other Target attributes its reader fills


def _section_and_key(path: str) -> tuple[str | None, str]:
    section, _, key = path.rpartition(".")
    return section or None, key


def _text(key: str) -> Reader:
    def read(data: dict, where: str) -> dict:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{where}: '{key}' must be a non-empty string")
        return {key: value}

    return read


def _figure(path: str, attribute: str, required: bool = False) -> Reader:
    """A figure ``{value, tag, source}`` at ``path`` (its table checked by :func:`_check_tables`)."""
    section, key = _section_and_key(path)

    def read(data: dict, where: str) -> dict:
        table = (data.get(section) or {}) if section else data
        return {attribute: read_figure(table, key, path, where, required=required)}

    return read


def _figures_by_dtype(path: str, attribute: str) -> Reader:
    """A figure per roof under ``path`` (its keys checked against DTYPES by :func:`_check_tables`)."""
    *sections, last = path.split(".")

    def read(data: dict, where: str) -> dict:
        table = data
        for section in (*sections, last):
            table = table.get(section) or {}
        return {attribute: {k: read_figure(table, k, f"{path}.{k}", where) for k in table}}

    return read


def _fraction(key: str) -> Reader:
    def read(data: dict, where: str) -> dict:
        return {key: read_fraction(data, key, key, where) if key in data else None}

    return read


def _energy_table(data: dict, where: str) -> dict:
    return {"energy_table": str((data.get("energy") or {}).get("table", ""))}


def _fp32_math(data: dict, where: str) -> dict:
    """``[fp32_math]``: the roof the runtime runs float32 products on, and where that is documented."""
    section = read_section(data, "fp32_math", where, required=False)
    if not section:
        return {}
    roof, source = section.get("roof"), section.get("source")
    if roof not in FP32_MATH_ROOFS:
        raise UsageError(f"{where}: 'fp32_math.roof' must be one of {', '.join(FP32_MATH_ROOFS)}, not {shown(roof)}")
    if roof not in data["peak_ops_per_s"]:
        raise UsageError(f"{where}: 'fp32_math.roof' is {roof!r}, but the file gives no 'peak_ops_per_s.{roof}'")
    if not isinstance(source, str) or not source.strip():
        raise UsageError(f"{where}: 'fp32_math.source' must say where the runtime documents which units run float32")
    return {"fp32_math_roof": roof, "fp32_math_source": source}


def _efficiency(data: dict, where: str) -> dict:
    return read_efficiency(data, where, EFFICIENCY_CLASSES, DTYPES)


def _error_band(data: dict, where: str) -> dict:
    figure = read_figure(data, "error_band", "error_band", where, required=False)
    if figure is None:
        return {}
    if not 0 < figure.value <= 10:
        raise UsageError(
            f"{where}: 'error_band.value' is the fraction |predicted / measured - 1| a forecast stays "
            f"within (0.18 for +-18%), not {shown(figure.value)}"
        )
    roofs = data["error_band"].get("roofs", [])
    if not isinstance(roofs, list) or any(roof not in DTYPES for roof in roofs):
        raise UsageError(
            f"{where}: 'error_band.roofs' must list the roofs its measurements ran on "
            f"({', '.join(DTYPES)}), not {shown(roofs)}"
        )
    return {"error_band": figure, "error_band_roofs": tuple(roofs)}


def _weights(data: dict, where: str) -> dict:
    section = read_section(data, "weights", where, required=False)
    if not section:
        return {}
    resident, source = section.get("resident"), section.get("source")
    if not isinstance(resident, bool):
        raise UsageError(f"{where}: 'weights.resident' must be true or false, not {shown(resident)}")
    if not isinstance(source, str) or not source.strip():
        raise UsageError(f"{where}: 'weights.source' must say why the parameters stay on chip (or do not)")
    partial = section.get("partial", True)
    if not isinstance(partial, bool):
        raise UsageError(f"{where}: 'weights.partial' must be true or false, not {shown(partial)}")
    return {"weights_resident": resident, "weights_source": source, "weights_partial": partial}


def _tiles(section: dict, side: str, where: str) -> dict[str, Figure]:
    """``parallel.tile_rows`` or ``parallel.tile_cols``: a whole number per roof."""
    table = section.get(side)
    if not isinstance(table, dict) or not table:
        raise UsageError(f"{where}: 'parallel.{side}' is missing: give it per roof ({', '.join(DTYPES)})")
    for key in table:
        if key not in DTYPES:
            raise UsageError(f"{where}: 'parallel.{side}.{key}' is not a known dtype ({', '.join(DTYPES)})")
    tiles = {key: _required_figure(table, key, f"parallel.{side}.{key}", where) for key in table}
    for key, figure in tiles.items():
        if figure.value != int(figure.value):
            raise UsageError(f"{where}: 'parallel.{side}.{key}.value' must be a whole number, not {figure.value:g}")
    return tiles


def _required_figure(table: dict, key: str, label: str, where: str) -> Figure:
    figure = read_figure(table, key, label, where)
    assert figure is not None  # a required figure: read_figure raises when it is missing
    return figure


def _parallel(data: dict, where: str) -> dict:
    section = read_section(data, "parallel", where, required=False)
    if not section:
        return {"parallel": None}
    kind = section.get("kind")
    if kind not in PARALLEL_KINDS:
        raise UsageError(f"{where}: 'parallel.kind' must be one of {', '.join(PARALLEL_KINDS)}, not {shown(kind)}")
    rows, cols = _tiles(section, "tile_rows", where), _tiles(section, "tile_cols", where)
    if set(rows) != set(cols):
        raise UsageError(f"{where}: 'parallel.tile_rows' and 'parallel.tile_cols' must name the same roofs")
    units = _required_figure(section, "units", "parallel.units", where)
    if units.value != int(units.value):
        raise UsageError(f"{where}: 'parallel.units.value' must be a whole number, not {units.value:g}")
    return {"parallel": Parallel(kind, units, rows, cols)}


def _fusion(data: dict, where: str) -> dict:
    section = read_section(data, "fusion", where, required=False)
    if not section:
        return {}
    rules = section.get("rules")
    if not isinstance(rules, list) or any(rule not in FUSION_RULES for rule in rules):
        raise UsageError(
            f"{where}: 'fusion.rules' must be a list of {', '.join(FUSION_RULES)} (or [] for none), not {shown(rules)}"
        )
    source = section.get("source")
    if not isinstance(source, str) or not source.strip():
        raise UsageError(f"{where}: 'fusion.source' must say which runtime fuses these and where that is documented")
    return {"fusion": tuple(dict.fromkeys(rules)), "fusion_source": source}


def _interconnect(data: dict, where: str) -> dict:
    return {"interconnect": read_interconnect(data, where)}


def _dataflow(data: dict, where: str) -> dict:
    return {"dataflow": read_dataflow(data, where)}


def _edge_tpu(data: dict, where: str) -> dict:
    return {"edge_tpu": read_edge_tpu(data, where)}


# --- what the JSON target entry shows (result.entries.target_entry places these keys among the report's)


def _value(attribute: str, key: str | None = None) -> Callable[[Target], dict]:
    def show(target: Target) -> dict:
        figure = getattr(target, attribute)
        return {key or attribute: figure.value if figure else None}

    return show


def _roofs_json(target: Target) -> dict:
    return {
        "roofs": {
            roof: {
                "peak_flops_per_s": figure.value,
                "ridge_flops_per_byte": target.ridge(roof),
                "tag": figure.tag,
                "source": figure.source,
            }
            for roof, figure in target.peak_ops_per_s.items()
        }
    }


def _efficiency_json(target: Target) -> dict:
    return {
        "efficiency": {name: figure.value for name, figure in target.efficiency.items()},  # absent: 1.0 (peak)
        "efficiency_by_op": target.efficiency_by_op,  # class -> op type -> its figure on the compute and on-chip roofs
        # "<class>" or "<class>.<roof>" -> [[output rows, fraction], ...]: interpolated in log(rows)
        "efficiency_by_rows": {
            key: [list(point) for point in points] for key, points in target.efficiency_by_rows.items()
        },
        "efficiency_by_columns": {
            key: [list(point) for point in points] for key, points in target.efficiency_by_columns.items()
        },
    }


def _parallel_json(target: Target) -> dict:
    parallel = target.parallel
    return {
        "parallel": None
        if parallel is None
        else {  # the units and the tile each takes, per roof
            "kind": parallel.kind,
            "units": parallel.units.value,
            "tiles": {roof: parallel.tile(roof) for roof in parallel.tile_rows},
        }
    }


def _attribute_json(attribute: str) -> Callable[[Target], dict]:
    return lambda target: {attribute: getattr(target, attribute)}


# In the order a file is validated: the first problem found is the one reported.
FIELDS: tuple[TargetField, ...] = (
    TargetField("name", "name", "", True, "the target's name", _text("name"), _attribute_json("name")),
    TargetField(
        "description",
        "description",
        "",
        True,
        "what the device and its runtime are",
        _text("description"),
        _attribute_json("description"),
    ),
    TargetField(
        "peak_ops_per_s.<dtype>",
        "peak_ops_per_s",
        "op/s",
        True,
        "dense peak per roof, at least one of " + ", ".join(DTYPES),
        _figures_by_dtype("peak_ops_per_s", "peak_ops_per_s"),
        _roofs_json,
    ),
    TargetField(
        "dram.bandwidth_bytes_per_s",
        "dram_bytes_per_s",
        "B/s",
        True,
        "DRAM bandwidth",
        _figure("dram.bandwidth_bytes_per_s", "dram_bytes_per_s", required=True),
        _value("dram_bytes_per_s"),
    ),
    TargetField(
        "dram.energy_pj_per_byte",
        "dram_pj_per_byte",
        "pJ/B",
        False,
        "energy of a DRAM byte",
        _figure("dram.energy_pj_per_byte", "dram_pj_per_byte"),
    ),
    TargetField(
        "dram.size_bytes",
        "dram_size_bytes",
        "B",
        False,
        "the device memory's capacity (parameters, activations, a KV cache)",
        _figure("dram.size_bytes", "dram_size_bytes"),
        _value("dram_size_bytes"),
    ),
    TargetField(
        "onchip.size_bytes",
        "onchip_bytes",
        "B",
        False,
        "on-chip memory",
        _figure("onchip.size_bytes", "onchip_bytes"),
        _value("onchip_bytes"),
    ),
    TargetField(
        "onchip.bandwidth_bytes_per_s",
        "onchip_bytes_per_s",
        "B/s",
        False,
        "on-chip bandwidth",
        _figure("onchip.bandwidth_bytes_per_s", "onchip_bytes_per_s"),
        _value("onchip_bytes_per_s"),
    ),
    TargetField(
        "onchip.energy_pj_per_byte",
        "onchip_pj_per_byte",
        "pJ/B",
        False,
        "energy of an on-chip byte",
        _figure("onchip.energy_pj_per_byte", "onchip_pj_per_byte"),
    ),
    TargetField(
        "energy.mul_pj.<dtype>",
        "mul_pj",
        "pJ",
        False,
        "energy of a multiply per roof",
        _figures_by_dtype("energy.mul_pj", "mul_pj"),
    ),
    TargetField(
        "energy.add_pj.<dtype>",
        "add_pj",
        "pJ",
        False,
        "energy of an add per roof",
        _figures_by_dtype("energy.add_pj", "add_pj"),
    ),
    TargetField(
        "energy.table", "energy_table", "", False, "which process node's table the energies use", _energy_table
    ),
    TargetField("process_nm", "process_nm", "nm", False, "process node", _figure("process_nm", "process_nm")),
    TargetField("clock_hz", "clock_hz", "Hz", False, "clock", _figure("clock_hz", "clock_hz")),
    TargetField("power_w", "power_w", "W", False, "power", _figure("power_w", "power_w")),
    TargetField(
        "static_power_w",
        "static_power_w",
        "W",
        False,
        "drawn doing nothing: static power x latency joins the energy (absent: dynamic energy only)",
        _figure("static_power_w", "static_power_w"),
        _value("static_power_w"),
    ),
    TargetField(
        "[fp32_math]",
        "fp32_math_roof",
        "",
        False,
        "roof and source: the roof the runtime runs float32 products on (tf32 under TensorRT)",
        _fp32_math,
        also=("fp32_math_source",),
    ),
    TargetField(
        "node_overhead_s",
        "node_overhead_s",
        "s",
        False,
        "a fixed cost per kernel that does work (a launch)",
        _figure("node_overhead_s", "node_overhead_s"),
        _value("node_overhead_s"),
    ),
    TargetField(
        "split_overhead_s",
        "split_overhead_s",
        "s",
        False,
        "on top of the launch for a kernel split over the threads",
        _figure("split_overhead_s", "split_overhead_s"),
    ),
    TargetField(
        "cold_node_overhead_s",
        "cold_node_overhead_s",
        "s",
        False,
        "the launch when a run streams past the on-chip memory",
        _figure("cold_node_overhead_s", "cold_node_overhead_s"),
    ),
    TargetField(
        "run_overhead_s",
        "run_overhead_s",
        "s",
        False,
        "what a run costs beyond its kernels",
        _figure("run_overhead_s", "run_overhead_s"),
    ),
    TargetField(
        "dram_stall",
        "dram_stall",
        "fraction",
        False,
        "the share of a compute-bound kernel's DRAM time its compute does not hide",
        _fraction("dram_stall"),
    ),
    TargetField(
        "subnormal_s_per_element",
        "subnormal_s_per_element",
        "s",
        False,
        "a masked Softmax's exp that underflows, on the CPU's slow path",
        _figure("subnormal_s_per_element", "subnormal_s_per_element"),
    ),
    TargetField(
        "[efficiency.<class>]",
        "efficiency",
        "fraction",
        False,
        "the fraction of the roofline a kernel class reaches; per roof, by_op, by_rows, by_columns",
        _efficiency,
        _efficiency_json,
        also=("efficiency_on_roof", "efficiency_by_columns", "efficiency_by_op", "efficiency_by_rows"),
    ),
    TargetField(
        "[parallel]",
        "parallel",
        "",
        False,
        "kind, units, tile_rows.<dtype>, tile_cols.<dtype>",
        _parallel,
        _parallel_json,
    ),
    TargetField(
        "[error_band]",
        "error_band",
        "fraction",
        False,
        "a forecast's measured |predicted / measured - 1|, and the roofs it covers",
        _error_band,
        also=("error_band_roofs",),
    ),
    TargetField(
        "[weights]",
        "weights_resident",
        "",
        False,
        "resident, partial, source: whether the parameters stay on chip between runs",
        _weights,
        _attribute_json("weights_resident"),
        also=("weights_source", "weights_partial"),
    ),
    TargetField(
        "[fusion]",
        "fusion",
        "",
        False,
        "rules, source: the rule sets the runtime fuses",
        _fusion,
        also=("fusion_source",),
    ),
    TargetField(
        "[interconnect.<link>]", "interconnect", "", False, "how several such devices are linked", _interconnect
    ),
    TargetField(
        "[dataflow]",
        "dataflow",
        "",
        False,
        "context_bytes, units, switch_s, efficiency, activation_bytes_per_s, layers_per_context, norm_layers, "
        "softmax_layers, stage_s, fill_stages, row_s, partition_batch: a layer-pipelined chip (Hailo)",
        _dataflow,
    ),
    TargetField(
        "[edge_tpu]",
        "edge_tpu",
        "",
        False,
        "host, source: the target the ops past the compiler's cut run on",
        _edge_tpu,
    ),
)


def _check_tables(data: dict, where: str) -> None:
    """The tables the fields are read from: the schema, the peaks' roofs, ``[dram]``, and the
    ``[onchip]`` and ``[energy]`` tables when given (the energies' roofs)."""
    if data.get("schema", SCHEMA) != SCHEMA:
        raise UsageError(f"{where}: 'schema' is {shown(data.get('schema'))}; this onnxroof reads {SCHEMA!r}")
    peaks = data.get("peak_ops_per_s")
    if not isinstance(peaks, dict) or not peaks:
        raise UsageError(f"{where}: 'peak_ops_per_s' is missing: give at least one of {', '.join(DTYPES)}")
    for key in peaks:
        if key not in DTYPES:
            raise UsageError(f"{where}: 'peak_ops_per_s.{key}' is not a known dtype ({', '.join(DTYPES)})")
    read_section(data, "dram", where)
    read_section(data, "onchip", where, required=False)
    energy = read_section(data, "energy", where, required=False)
    for kind in ("mul_pj", "add_pj"):
        for key in energy.get(kind, {}):
            if key not in DTYPES:
                raise UsageError(f"{where}: 'energy.{kind}.{key}' is not a known dtype ({', '.join(DTYPES)})")


def read_fields(data: dict, where: str) -> dict:
    """Every field of a target file's ``data`` as Target keywords, validated in :data:`FIELDS`'
    order; every problem is a one-line UsageError naming the field."""
    _check_tables(data, where)
    keywords: dict = {}
    for field in FIELDS:
        keywords.update(field.read(data, where))
    return keywords


def target_json(target: Target) -> dict:
    """What the JSON target entry shows of ``target``'s fields, by key, in :data:`FIELDS`' order."""
    shown_fields: dict = {}
    for field in FIELDS:
        if field.json is not None:
            shown_fields.update(field.json(target))
    return shown_fields


def field_of(attribute: str) -> TargetField:
    """The row of :data:`FIELDS` that fills ``attribute``."""
    return next(f for f in FIELDS if f.attribute == attribute or attribute in f.also)


def section_header(attribute: str, dtype: str | None = None) -> str:
    """The TOML table a one-figure field is written under (``[node_overhead_s]``; with ``dtype``,
    a roof's figure: ``[peak_ops_per_s.fp32]``)."""
    path = field_of(attribute).path
    return f"[{path.replace('<dtype>', dtype) if dtype else path}]"


def field_table_markdown() -> str:
    """The README's table of the target file's fields, one row per :data:`FIELDS` row."""
    rows = ["| field | unit | required | what it is |", "| --- | --- | --- | --- |"]
    rows += [f"| `{f.path}` | {f.unit or '-'} | {'yes' if f.required else 'no'} | {f.doc} |" for f in FIELDS]
    return "\n".join(rows) + "\n"
