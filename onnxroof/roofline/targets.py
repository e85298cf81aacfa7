"""Hardware targets: one TOML file per target (``hardware/``), validated on load.

Schema ``onnxroof-target/1``. Every figure is a table ``{value, tag, source}``: ``tag`` is
``vendor``, ``paper``, ``estimate`` or ``measured`` and ``source`` says where the number comes from
(for an estimate, the arithmetic). Required: ``name``, ``description``, ``peak_ops_per_s.<dtype>``
(dense, at least one of fp32 tf32 fp16 bf16 fp8 int8 int4) and ``dram.bandwidth_bytes_per_s``.
Optional: ``dram.size_bytes`` (the device memory's capacity: what the parameters, the activations
and a decoder's KV cache must fit in), ``onchip.size_bytes`` and ``onchip.bandwidth_bytes_per_s``
(on-chip memory), ``dram.energy_pj_per_byte``, ``onchip.energy_pj_per_byte``,
``energy.mul_pj.<dtype>``, ``energy.add_pj.<dtype>``, ``energy.table`` (which process node's table
the energies use), ``process_nm``, ``clock_hz``, ``power_w``, ``static_power_w`` (what the device
draws doing nothing, its idle or static power: added to the energy as static power x latency;
absent: the energy is the work's dynamic energy only, and every output says "dynamic"),
``[fp32_math]`` (``roof``: the roof the target's runtime runs float32 convolutions and matmuls on,
``"tf32"`` where it uses TF32 tensor cores by default, as TensorRT does on Ampere, Ada and Hopper;
it needs a ``peak_ops_per_s.tf32``; ``source``: where the runtime documents it; absent: ``"fp32"``),
``node_overhead_s`` (a fixed cost per kernel that does work, such as a GPU kernel launch; added to
every kernel's roofline time), ``run_overhead_s`` (what one run costs beyond its kernels: the
runtime binding the inputs and outputs, the call itself; added once to the latency, as overhead),
``dram_stall`` (the share, in (0, 1], of a compute-bound kernel's DRAM time its compute does not
hide: it adds to the compute time; a CPU GEMM stalls on weights read past its caches; absent: 0, the
roofline's max), ``cold_node_overhead_s`` (what takes its place when a run touches more bytes (its
parameters and every activation, once) than ``onchip.size_bytes``: a CPU runtime's own state and
code are evicted between kernels, so each launch misses the caches; absent: ``node_overhead_s``),
``split_overhead_s`` (what a kernel costs on top of ``node_overhead_s`` when the runtime splits it
over several threads: a CPU runtime's intra-op pool hands each thread its share and waits for them
all; added to the kernels an onnxruntime profile shows split, and by the rules to the convolutions
and matmuls of at least ``SPLIT_MACS`` multiply-adds, the work below which onnxruntime's MLAS keeps
a product on one thread; absent: 0), ``subnormal_s_per_element`` (what one exp that underflows to a
subnormal float costs on the CPU's slow path: charged per element a causal mask hides from a
Softmax, ``cost/masks.py``; absent: 0, as on a GPU, which flushes subnormals to zero), ``[fusion]``
(``rules``: the rule sets of ``FUSION_RULES`` the target's runtime fuses, ``[]`` for none;
``source``: why; absent: no fusion, one kernel per node), ``efficiency.<class>`` (the fraction of
the roofline a kernel of that class achieves on the target's runtime, in (0, 1], one of
``EFFICIENCY_CLASSES``; a kernel's roofline time is divided by it; absent: 1.0, the peak; ``onnxroof
calibrate`` measures them for the host, and the bundled vendor targets give none, so they predict at
peak; three optional refinements, applied before the class's ``value``:
``efficiency.<class>.<roof>``, a figure for the kernels of that class that run on that compute roof
(one of ``DTYPES``: int8 convolutions reach a different share of the int8 peak than float32 ones of
the fp32 peak), and ``efficiency.<class>.by_columns`` (also under a roof's figure:
``efficiency.<class>.<roof>.by_columns``), a list of ``[output columns, fraction]`` points, columns
increasing, for the convolutions and matmuls of that class (on that roof): a kernel's fraction is
interpolated linearly in log(columns) between them and held at the end points past them, its columns
being ``work.efficiency_columns``' (a matmul's N, a convolution's output channels, a grouped
convolution's channels; a one-row matmul over 10 columns runs a fraction of one over 512 on a CPU's
vector units, and a depthwise kernel, which runs the channels across the vector lanes, a fraction
over 3 channels of what it reaches over 32; :meth:`Target.columns_curve` says which curve a kernel
follows, as :meth:`Target.rows_curve` does for rows), and ``efficiency.<class>.by_op``, an inline
table of op type -> fraction in (0, 1] (``by_op = { Erf = 0.16, QuantizeLinear = 0.3 }``) for the
kernels of that class that run those ops (a fused kernel takes the lowest figure among its ops that
have one: it runs at the pace of its slowest op; :meth:`Target.op_efficiency`): it divides the
kernel's compute and on-chip roofs in place of the class's figure, while its DRAM roof keeps the
class's (a transcendental function's or a conversion's kernel is bound by the core's throughput,
measured with its data on chip, and the core keeps up with data streamed from DRAM: an Erf over 4
MiB takes its on-chip time over its figure, not its DRAM time over it); on a target with no on-chip
bandwidth it divides the DRAM roof too; their tag and source are the figure's; and
``efficiency.<class>.by_rows`` (also under a roof's figure: ``efficiency.<class>.<roof>.by_rows``),
a list of ``[output rows, fraction]`` points, rows increasing, for the convolutions and matmuls of
that class (on that roof): a kernel's fraction is interpolated linearly in log(rows) between them
and held past the end points, its rows being its work shape's (a matmul's M per product, a
convolution's output pixels): a CPU GEMM kernel runs its rows in strips of a few (onnxruntime's
AVX-512 SGEMM: 12) against a panel of the weights, so a product of 32 rows leaves more of its time
in the strips' fixed work than one of 512 does (:meth:`Target.rows_curve` says which curve a kernel
follows: its roof's, else its class's; a class gives ``by_rows`` or ``by_columns``, not both),
``[weights]`` (``resident``: whether the parameters stay in on-chip memory from one run to the next
when they fit beside the peak activations, as a CPU's last-level cache keeps them over repeated
runs; ``partial``: when they do not all fit, whether those that do stay (true, the default: the Edge
TPU compiler caches what fits) or all of them stream (false: HailoRT reloads every context each
frame); ``source``: why; absent: false, parameters are read from DRAM every run), ``[parallel]``
(the parallel compute units and the unit of work each takes: ``kind`` is ``tiles`` (GPU SMs or CPU
cores: a convolution's or matmul's output rows x columns split into tiles of ``tile_rows.<roof>`` x
``tile_cols.<roof>``) or ``systolic`` (a weight-stationary array: ``tile_rows`` is its height, taken
by the reduction depth, ``tile_cols`` its width, taken by the output channels); ``units.value`` is
how many units run such tiles at once; a roof with no tile is not limited; see
``placement.parallel_fraction``; absent: no limit), ``error_band`` (a forecast's measured error: the
fraction ``|predicted / measured - 1|`` its latencies stayed within, its ``source`` naming the
measurements; optional ``roofs``: the roofs those measurements ran on, so that a model whose time is
mostly on other roofs gets no band), ``[interconnect]`` (how several such devices are linked, one
table per link class: ``interconnect.py``). A target with no off-chip memory (weights held on chip)
sets ``dram.bandwidth_bytes_per_s`` to the on-chip figure and says so in its source.

A figure tagged ``borrowed`` was taken from other targets, not measured on this one (a launch
cost that is the median of the runtime's other targets, where this one has no batch-1 row): every
output that uses it says so (:attr:`Target.borrowed`), and a forecast's error band does not cover a
latency that rests on it (``placement``).

What its latency is follows from its figures (:class:`LatencyKind`): peak figures give a
**bound** (every kernel at its roof: a run takes at least that long), and a runtime's measured
efficiency for every kernel class it names gives a **forecast**.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.enums import TextEnum
from ..core.errors import OptionError, UsageError
from ..core.files import not_a_file, read_small_file
from .dataflow import DataflowChip
from .edge_tpu import EdgeTpuHost
from .figures import BORROWED, FIGURE_RANGE, MAX_POINT_COUNT, TAGS, Figure, interpolate_log  # noqa: F401
from .interconnect import Interconnect
from .target_paths import (  # noqa: F401
    MAX_TARGET_FILE_BYTES,
    USER_TARGETS_VARIABLE,
    bundled_targets,
    target_files,
    user_target_dir,
)

# the file's fields, declared once, and the names they are checked against: read through this module too
from .target_schema import (  # noqa: F401
    DTYPES,
    EFFICIENCY_CLASSES,
    FP32_MATH_ROOFS,
    FUSION_RULES,
    LOW_REUSE_MACS_PER_OUTPUT,
    LOW_REUSE_MACS_PER_WEIGHT,
    PARALLEL_KINDS,
    SCHEMA,
    Parallel,
    read_fields,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

# the roof a node's element type runs on, then the fallbacks when a target lacks that roof
ROOF_PREFERENCE = {
    "fp32": ("fp32", "fp16", "bf16", "int8"),
    "tf32": ("tf32", "fp32", "fp16", "bf16", "int8"),
    "fp16": ("fp16", "bf16", "fp32", "int8"),
    "bf16": ("bf16", "fp16", "fp32", "int8"),
    "fp8": ("fp8", "fp16", "bf16", "int8", "fp32"),  # without fp8 units, a float8 tensor is widened
    "int8": ("int8", "int4", "fp16", "bf16", "fp32"),
    "int4": ("int4", "int8", "fp16", "bf16", "fp32"),
}
# ONNX element type name -> roof
_ROOF_OF_DTYPE = {
    "float32": "fp32",
    "float64": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "int8": "int8",
    "uint8": "int8",
    "int16": "int8",
    "uint16": "int8",
    "int32": "int8",
    "uint32": "int8",
    "int4": "int4",
    "uint4": "int4",
    "float8e4m3fn": "fp8",
    "float8e5m2": "fp8",
    "float8e4m3fnuz": "fp8",
    "float8e5m2fnuz": "fp8",
}

# onnxruntime's MLAS gives a GEMM or convolution one more thread per 65,536 multiply-adds
# (MLAS_SGEMM_THREAD_COMPLEXITY and MLAS_QGEMM_THREAD_COMPLEXITY, microsoft/onnxruntime
# onnxruntime/core/mlas/lib/mlasi.h@7c8b095): from this many a product is split over two threads
# and pays the target's split_overhead_s (a profile on this machine agrees: a 1x784 by 784x256
# Gemm, 200,704 multiply-adds, split; 1x256 by 256x128, 32,768, did not)
SPLIT_MACS = 65_536


class LatencyKind(TextEnum):
    """What a predicted latency is: at peak figures a kernel can go no faster than its roofs, so
    the latency is a lower bound; scaled by measured efficiencies it is a forecast."""

    BOUND = "bound"
    FORECAST = "forecast"


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    path: str
    peak_ops_per_s: dict[str, Figure]
    dram_bytes_per_s: Figure
    dram_pj_per_byte: Figure | None = None
    dram_size_bytes: Figure | None = None  # the device memory's capacity (dram.size_bytes)
    onchip_bytes: Figure | None = None
    onchip_bytes_per_s: Figure | None = None
    onchip_pj_per_byte: Figure | None = None
    mul_pj: dict[str, Figure] = field(default_factory=dict)
    add_pj: dict[str, Figure] = field(default_factory=dict)
    energy_table: str = ""
    process_nm: Figure | None = None
    clock_hz: Figure | None = None
    power_w: Figure | None = None
    static_power_w: Figure | None = None  # drawn doing nothing: static power x latency joins the energy
    # the roof float32 convolutions and matmuls run on under the target's runtime ([fp32_math]):
    # "tf32" where it uses TF32 tensor cores by default; its source says where that is documented
    fp32_math_roof: str = "fp32"
    fp32_math_source: str = ""
    node_overhead_s: Figure | None = None
    split_overhead_s: Figure | None = None  # on top of node_overhead_s for a kernel split over the threads
    cold_node_overhead_s: Figure | None = None  # node_overhead_s when a run streams past the on-chip memory
    run_overhead_s: Figure | None = None  # what a run costs beyond its kernels (a call's own fixed cost)
    dram_stall: Figure | None = None  # the share of a compute-bound kernel's DRAM time its compute does not hide
    subnormal_s_per_element: Figure | None = None  # a masked Softmax's underflowed exps (cost/masks.py)
    fusion: tuple[str, ...] = ()  # FUSION_RULES the runtime applies; () = one kernel per node
    fusion_source: str = ""
    efficiency: dict[str, Figure] = field(default_factory=dict)  # EFFICIENCY_CLASSES -> fraction of the roofline
    # class -> roof -> the fraction for that class's kernels on that roof (efficiency.<class>.<roof>)
    efficiency_on_roof: dict[str, dict[str, Figure]] = field(default_factory=dict)
    # "<class>" or "<class>.<roof>" -> ((output columns, fraction), ...) increasing: interpolated in log(columns)
    # (efficiency.<class>.by_columns, efficiency.<class>.<roof>.by_columns); columns_curve picks one
    efficiency_by_columns: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    # class -> op type -> the fraction for that class's kernels running that op (efficiency.<class>.by_op)
    efficiency_by_op: dict[str, dict[str, float]] = field(default_factory=dict)
    # "<class>" or "<class>.<roof>" -> ((output rows, fraction), ...) increasing: interpolated in
    # log(rows) (efficiency.<class>.by_rows, efficiency.<class>.<roof>.by_rows); rows_curve picks one
    efficiency_by_rows: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    weights_resident: bool = False  # parameters stay on chip between runs when they fit beside the activations
    weights_source: str = ""
    weights_partial: bool = True  # when not all fit, those that do stay (False: all of them stream)
    parallel: Parallel | None = None  # None: no parallelism limit, the plain roofline
    error_band: Figure | None = None  # a forecast's measured |predicted / measured - 1|, and on what
    error_band_roofs: tuple[str, ...] = ()  # the roofs the band's measurements ran on (): all
    interconnect: Interconnect | None = None  # how several such devices are linked ([interconnect]); None: not given
    dataflow: DataflowChip | None = None  # a layer-pipelined chip ([dataflow]: roofline/dataflow.py); None: not one
    edge_tpu: EdgeTpuHost | None = None  # an Edge TPU's host for the ops past its compiler's cut (edge_tpu.py)

    @property
    def borrowed(self) -> dict[str, Figure]:
        """The figures (by their key in the file) taken from other targets, not measured on this
        one (tag ``borrowed``).

        >>> f = Figure(1e9, "vendor", "x")
        >>> Target("t", "", "", {"fp32": f}, f, node_overhead_s=Figure(7e-6, "borrowed", "others' median")).borrowed
        {'node_overhead_s': Figure(value=7e-06, tag='borrowed', source="others' median")}
        """
        found = {}
        for key in (
            "node_overhead_s",
            "cold_node_overhead_s",
            "split_overhead_s",
            "run_overhead_s",
            "error_band",
            "static_power_w",
        ):
            figure = getattr(self, key)
            if figure is not None and figure.tag == BORROWED:
                found[key] = figure
        for name, figure in self.efficiency.items():
            if figure.tag == BORROWED:
                found[f"efficiency.{name}"] = figure
        return found

    def mac_roof_dtype(self, dtype: str) -> str:
        """The type a convolution or matmul computing in ``dtype`` runs as on this target's
        runtime: ``"tf32"`` for float32 where the target's ``[fp32_math]`` says its runtime runs
        them on TF32 tensor cores, else ``dtype``.

        >>> f = Figure(1e12, "vendor", "x")
        >>> t = Target("t", "", "", {"fp32": f, "tf32": f}, f, fp32_math_roof="tf32")
        >>> u = Target("u", "", "", {"fp32": f}, f)
        >>> t.mac_roof_dtype("float32"), t.mac_roof_dtype("float16"), u.mac_roof_dtype("float32")
        ('tf32', 'float16', 'float32')
        """
        return "tf32" if self.fp32_math_roof == "tf32" and self.wanted_roof(dtype) == "fp32" else dtype

    @property
    def latency_kind(self) -> LatencyKind:
        """A forecast when every efficiency the target gives was measured on its runtime
        (``onnxroof calibrate`` writes them), or its layer pipeline's constants were fitted on
        measurements (``[dataflow]``: roofline/dataflow.py); else a bound: the roofs are peaks."""
        if self.dataflow is not None and self.dataflow.forecast:
            return LatencyKind.FORECAST
        on_roofs = (f for roofs in self.efficiency_on_roof.values() for f in roofs.values())
        figures = [*self.efficiency.values(), *on_roofs]
        measured = self.efficiency and all(figure.tag == "measured" for figure in figures)
        return LatencyKind.FORECAST if measured else LatencyKind.BOUND

    def efficiency_of(
        self, kernel_class: str | None, roof: str | None = None, columns: int | None = None, rows: int | None = None
    ) -> float:
        """The fraction of the roofline a kernel of ``kernel_class`` achieves (1.0: not given): the
        ``by_rows`` points of :meth:`rows_curve` at the kernel's output ``rows`` if there are such
        points and the kernel has a work shape; else the ``by_columns`` points of
        :meth:`columns_curve` at its output ``columns`` (``work.efficiency_columns``: a product's
        columns, a grouped convolution's channels); else the class's figure for ``roof`` if it
        gives one, else its value.

        >>> t = Target("t", "", "", {}, Figure(1e9, "estimate", "x"), efficiency={"gemv": Figure(0.5, "estimate", "x")},
        ...            efficiency_by_columns={"gemv": ((10, 0.2), (1000, 0.8))})
        >>> t.efficiency_of("gemv"), t.efficiency_of("gemv", columns=100), t.efficiency_of("gemv", columns=5000)
        (0.5, 0.5, 0.8)
        >>> t = Target("t", "", "", {}, Figure(1e9, "estimate", "x"), efficiency={"gemm": Figure(0.9, "estimate", "x")},
        ...            efficiency_by_rows={"gemm": ((16, 0.6), (256, 1.0))})
        >>> t.efficiency_of("gemm"), t.efficiency_of("gemm", "fp32", rows=64), t.efficiency_of("gemm", "int8", rows=8)
        (0.9, 0.8, 0.6)
        """
        if not kernel_class:
            return 1.0
        curve = self.rows_curve(kernel_class, roof)
        if curve and rows:
            return interpolate_log(self.efficiency_by_rows[curve], rows)
        curve = self.columns_curve(kernel_class, roof)
        if curve and columns:
            return interpolate_log(self.efficiency_by_columns[curve], columns)
        on_roof = self.efficiency_on_roof.get(kernel_class, {}).get(roof) if roof else None
        if on_roof is not None:
            return on_roof.value
        figure = self.efficiency.get(kernel_class)
        return figure.value if figure else 1.0

    def rows_curve(self, kernel_class: str | None, roof: str | None = None) -> str | None:
        """Which ``by_rows`` curve a kernel of ``kernel_class`` on ``roof`` follows: the roof's
        (``"gemm.int8"``) when the class gives a figure for that roof, else the class's
        (``"gemm"``); None when that figure has no curve (a roof's figure without one holds at
        every row count: its kernels may be another runtime kernel than the class's).

        >>> f = Figure(0.5, "estimate", "x")
        >>> t = Target("t", "", "", {}, f, efficiency={"gemm": f}, efficiency_on_roof={"gemm": {"int8": f, "fp16": f}},
        ...            efficiency_by_rows={"gemm": ((16, 0.6),), "gemm.int8": ((49, 0.25),)})
        >>> [t.rows_curve("gemm", roof) for roof in ("fp32", "int8", "fp16")], t.rows_curve("gemv")
        (['gemm', 'gemm.int8', None], None)
        """
        return self._curve(self.efficiency_by_rows, kernel_class, roof)

    def columns_curve(self, kernel_class: str | None, roof: str | None = None) -> str | None:
        """Which ``by_columns`` curve a kernel of ``kernel_class`` on ``roof`` follows, chosen as
        :meth:`rows_curve` chooses (``"depthwise.int8"``, ``"gemv"``), or None."""
        return self._curve(self.efficiency_by_columns, kernel_class, roof)

    def _curve(self, curves: dict[str, tuple], kernel_class: str | None, roof: str | None) -> str | None:
        """The key of ``curves`` for :meth:`rows_curve` and :meth:`columns_curve`."""
        if not kernel_class:
            return None
        if roof and roof in self.efficiency_on_roof.get(kernel_class, {}):
            key = f"{kernel_class}.{roof}"
            return key if key in curves else None
        return kernel_class if kernel_class in curves else None

    def op_efficiency(self, kernel_class: str | None, op_types: Iterable[str]) -> float | None:
        """The ``by_op`` figure of a kernel of ``kernel_class`` running ``op_types``: the lowest
        among its op types the class's ``by_op`` names (a fused kernel runs at the pace of its
        slowest op); None when it names none of them, and the kernel runs at :meth:`efficiency_of`.
        It divides the kernel's compute and on-chip roofs (``placement.roofline``).

        >>> t = Target("t", "", "", {}, Figure(1e9, "estimate", "x"),
        ...            efficiency={"elementwise": Figure(1.0, "estimate", "x")},
        ...            efficiency_by_op={"elementwise": {"Erf": 0.25, "Tanh": 0.5}})
        >>> t.op_efficiency("elementwise", ["Erf", "Add"]), t.op_efficiency("elementwise", ["Add"])
        (0.25, None)
        >>> t.op_efficiency("gemm", ["Erf"]) is None
        True
        """
        table = self.efficiency_by_op.get(kernel_class or "", {})
        found = [table[op] for op in op_types if op in table]
        return min(found) if found else None

    def roof(self, dtype: str) -> tuple[str, float]:
        """(roof name, peak ops/s) for a node computing in ``dtype`` (an ONNX type name or roof)."""
        wanted = self.wanted_roof(dtype)
        for candidate in ROOF_PREFERENCE[wanted]:
            if candidate in self.peak_ops_per_s:
                return candidate, self.peak_ops_per_s[candidate].value
        name, figure = next(iter(self.peak_ops_per_s.items()))
        return name, figure.value

    def wanted_roof(self, dtype: str) -> str:
        """The roof a node in ``dtype`` would ideally run on (before any fallback)."""
        return _ROOF_OF_DTYPE.get(dtype, dtype if dtype in ROOF_PREFERENCE else "fp32")

    def ridge(self, roof: str) -> float:
        """FLOP per DRAM byte where a node turns from memory-bound to compute-bound."""
        return self.peak_ops_per_s[roof].value / self.dram_bytes_per_s.value

    def energy_per_op_pj(self, roof: str) -> float | None:
        """Mean energy of one counted operation: multiplies and adds are half each."""
        if roof in self.mul_pj and roof in self.add_pj:
            return (self.mul_pj[roof].value + self.add_pj[roof].value) / 2
        return None


def load_target(name_or_path: str) -> Target:
    """A target by name (``./hardware``, the user's folder, the bundled ones: :func:`target_files`),
    or a target file by path."""
    path = Path(name_or_path)
    if path.is_file():
        return parse_target(path)
    bundled = {} if name_or_path.endswith(".toml") else target_files()
    name_or_path = next((name for name in bundled if name.lower() == name_or_path.lower()), name_or_path)
    if name_or_path not in bundled and (name_or_path.endswith(".toml") or os.path.lexists(path)):
        raise OptionError(
            "targets",
            "{opt.targets} {target}: {what}; give the path of a target .toml file, or a "
            "target's name (`onnxroof targets` lists them)",
            target=name_or_path,
            what=not_a_file(path),
        )
    if name_or_path not in bundled and "," in name_or_path:  # --target a,b: a list where one name goes
        raise OptionError(
            "targets",
            "{opt.targets} {target}: no such target; give one name or file each time, repeating {opt.targets} "
            "for the next (a list, in Python)",
            target=name_or_path,
        )
    if name_or_path not in bundled:
        close = difflib.get_close_matches(name_or_path, bundled, n=3, cutoff=0.4)
        hint = f"did you mean {', '.join(close)}?" if close else "run `onnxroof targets` to list them"
        raise OptionError("targets", "{opt.targets} {target}: no such target; {hint}", target=name_or_path, hint=hint)
    return parse_target(bundled[name_or_path])


def parse_target(path: Path) -> Target:
    """Read and validate one target file; every problem is a one-line UsageError naming the field."""
    try:  # a regular file of a bounded size, as every target file on the search path is read
        data = tomllib.loads(read_small_file(path, MAX_TARGET_FILE_BYTES, "target file").decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from exc
    except (RecursionError, MemoryError, ValueError) as exc:  # the reader's own limits: nesting, huge numbers
        problem = (
            "nested too deeply"
            if isinstance(exc, RecursionError)
            else "too large"
            if isinstance(exc, MemoryError)
            else str(exc).splitlines()[0][:120]
        )
        raise UsageError(f"{path}: cannot be read as a target file ({problem})") from None
    return Target(path=str(path), **read_fields(data, str(path)))
