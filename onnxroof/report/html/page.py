"""What every HTML page shares: rendering, script data, labels and the format helpers.

The pages (``model_page``, ``diff_page``, ``compare_page``, ``sweep_page``; ``html`` re-exports
their renderers) build a context of strings and render it here, with one jinja2 environment over
``reports/templates/``. Everything that comes from a model (names, doc strings, producer) is
untrusted and autoescaped; script data is JSON with ``<``, ``>`` and ``&`` escaped, so no string
in it can close its ``<script>`` element. The pages load nothing from the network; a
Content-Security-Policy pins their one script by hash.

Also here, as public functions: what several pages show the same way (a target's card, a
model's side, a table cell, a bar). Numbers are worded by ``report/formatting.py``, which the
text renderers share.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from ...core.dtypes import dtype_name
from ...core.resources import resource_dir
from ...core.text import page_text
from ...core.units import iec, intensity, si
from ...core.version import __version__
from ..bounds import BOUND_LABELS, bound_line, time_by_bound
from ..formatting import (
    as_bound,
    count_text,
    edge_lines,
    format_value,
    latency_kind_short,
    latency_kind_words,
    rate_text,
    shape_text,
    share_percent,
)

if TYPE_CHECKING:
    from ...findings import DeviceFit
    from ...result import Analysis
    from ...roofline.placement import TargetReport

SCRIPT_TEMPLATE = "partials/_script.js.j2"
# a few distinct colours for models in compare / sweep / diff pages
SERIES_COLOURS = ("#3f6fd8", "#e8772e", "#2f9e6e", "#d64545", "#8a5cc9", "#c9a227", "#17a2b8", "#d46aa8")


_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


def script_json(value: Any) -> str:
    """JSON safe inside an HTML ``<script>`` element: no ``<``, ``>``, ``&`` or line separators."""
    try:  # nearly always: no NaN or infinity anywhere, and no need to copy the whole value
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)
    except ValueError:
        text = json.dumps(
            _finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
        )
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    # DEL and the C1 controls, which JSON leaves raw and HTML calls a parse error: escaped, the value kept
    return _RAW_CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def render_page(template: str, view: Any) -> str:
    """Render a page's view (a dataclass: its fields are the template's variables)."""
    env = _environment()
    script = env.get_template(SCRIPT_TEMPLATE).render()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    context = {field.name: getattr(view, field.name) for field in fields(view)}
    context.setdefault("version", __version__)
    context["script"] = Markup(script)  # static template text: nothing from a model in it
    context["script_hash"] = f"sha256-{digest}"
    return env.get_template(template).render(context)


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # model text (names, doc strings) with control characters is shown with '?', as in
        # every output; Markup is this package's own markup, already made safe where it was built
        finalize=lambda value: page_text(value) if type(value) is str else value,
    )


# ---------------------------------------------------------------------------------------------
# Shown the same way on several pages


@dataclass
class TargetCard:
    """One target's card: latency, throughput, bound and energy, each with its exact value as
    a title (the model page's cards; a row of the compare and sweep tables)."""

    name: str
    description: str
    latency: str
    latency_title: str
    throughput: str
    throughput_title: str
    bound: str  # the bound that takes the largest share of the latency
    bound_key: str
    bound_share: str
    bound_title: str
    time_split: str  # the latency's shares per bound: "overhead 94%, DRAM 6%"
    point_bound: str  # the whole-model point's bound
    point_bound_key: str
    bound_line: str
    energy: str
    energy_title: str
    utilization: str
    utilization_title: str
    latency_kind: str  # "lower bound · 2 node(s) not counted", "lower bound" (peak figures) or "forecast"
    energy_kind: str = "dynamic"  # "dynamic" (no static power stated) or "dynamic + static", under the energy
    memory: str = ""  # fits / does not fit in the device memory ("" when not checked)
    memory_sub: str = ""  # the largest batch (and context) that fits
    memory_title: str = ""
    # a chip's own execution model (formatting.edge_lines): a pipeline's fps and latency, an Edge TPU's cut
    edge: tuple[tuple[str, str], ...] = ()
    rate_unit: str = "inferences"  # "frames" on a layer pipeline


def target_card(report: TargetReport, fit: DeviceFit | None = None) -> TargetCard:
    """One target's card: latency, throughput, bound, energy; whether the model fits in its memory
    (``fit``, the findings stage's; None: not shown)."""
    share = report.time_share
    main = max(share.items(), key=lambda kv: kv[1])[0] if share else "none"
    point = report.model_point
    energy = report.energy_j
    split = report.energy_split_j
    batch = report.batch or 1
    card = TargetCard(
        name=report.target.name,
        description=report.target.description,
        latency=as_bound(format_value(report.latency_s, "seconds"), report),
        latency_title=f"{report.latency_s:.6g} s for one run at batch {batch}: every kernel, one after another; "
        + latency_kind_words(report),
        throughput=as_bound(f"{rate_text(report.throughput_per_s, report)}/s", report, at_most=True),
        throughput_title=(
            f"{report.throughput_per_s:.6g} frames per second: the pipeline's rate, not batch ÷ latency"
            if report.dataflow
            else f"{report.throughput_per_s:.6g} inferences per second (batch {batch} ÷ latency)"
        )
        + (f"; at most: {report.missing}" if not report.complete else ""),
        bound=BOUND_LABELS.get(main, main),
        bound_key=main,
        bound_share=share_percent(share.get(main, 0.0)),
        time_split=time_by_bound(share),
        bound_title="share of the latency per bound: "
        + time_by_bound(share)
        + "; the whole-model point (total FLOPs ÷ total DRAM bytes) is "
        + f"{BOUND_LABELS.get(point.bound, point.bound)}-bound",
        point_bound=BOUND_LABELS.get(point.bound, point.bound),
        point_bound_key=point.bound,
        bound_line=bound_line(point.bound, share),
        energy=format_value(energy, "joules") if energy is not None else "n/a",
        energy_title=(
            f"{report.energy_kind} energy per run: "
            + ", ".join(
                f"{part} {format_value(value, 'joules') if value is not None else 'n/a'}"
                for part, value in split.items()
            )
            + (f" ({energy:.6g} J)" if energy is not None else "")
        )
        if energy is not None
        else "the target gives no energy figure for part of the work: "
        + ", ".join(p for p, v in split.items() if v is None),
        utilization=share_percent(report.utilization) if report.utilization < 0.9995 else "100%",
        utilization_title=f"{report.utilization:.4%} of the model's main roof ({point.roof}) over the latency",
        latency_kind=latency_kind_short(report)
        + (" · launch cost borrowed" if "node_overhead_s" in report.borrowed else ""),
        energy_kind=report.energy_kind,
        **_memory_fit(fit),
        edge=tuple(edge_lines(report)),
        rate_unit="frames" if report.dataflow else "inferences",
    )
    return replace(card, **_pipeline_limit(report))


def _pipeline_limit(report: TargetReport) -> dict:
    """A layer pipeline's card says what limits its frame rate where another target's says which
    bound its kernels' time goes to (its time is its stages', not its kernels' on the roofline)."""
    timing = report.dataflow
    if timing is None:
        return {}
    count = len(timing.contexts)
    limit = timing.limiting if len(timing.limiting) <= 28 else "…" + timing.limiting[-27:]
    return {
        "bound": limit,
        "bound_key": "compute" if timing.stage_limited or timing.limiting == "compute at the peak" else "dram",
        "time_split": f"{count} context{'s' * (count > 1)}"
        + (f", {timing.group} frame{'s' * (timing.group > 1)} per load" if count > 1 else ""),
        "bound_title": f"what sets the frame rate: {timing.limit_words()}",
    }


def _memory_fit(fit: DeviceFit | None) -> dict:
    """The card's memory entry: whether the model fits in the device memory, the largest batch."""
    if fit is None or fit.fits is None:
        return {}
    from ...findings.wording import fit_text  # (loaded once an analysis was reviewed)

    room = [
        f"batch ≤ {fit.largest_batch:,}" if fit.largest_batch is not None else "",
        f"context ≤ {fit.longest_context:,}" if fit.longest_context is not None else "",
    ]
    return {
        "memory": "fits" if fit.fits else "does not fit",
        "memory_sub": ", ".join(r for r in room if r),
        "memory_title": fit_text(fit) + (f"; {fit.how}" if fit.how else ""),
    }


def report_on(analysis: Analysis, target: str) -> TargetReport | None:
    """The analysis's report on the target of that name (None: not analysed on it)."""
    return next((r for r in analysis.targets if r.target.name == target), None)


def target_capacities(analysis: Analysis) -> list[tuple[str, int]]:
    return [
        (f"{r.target.name} on-chip", int(r.target.onchip_bytes.value))
        for r in analysis.targets
        if r.target.onchip_bytes
    ]


@dataclass
class ModelSide:
    """A model in a page's header (the diff page's base and head, the sweep page's model)."""

    role: str
    name: str
    path: str
    nodes: str
    producer: str
    inputs: str


def model_side(analysis: Analysis, role: str) -> ModelSide:
    """A model in a page's header: its name, file, node count, producer and inputs."""
    model = analysis.model
    return ModelSide(
        role=role,
        name=model.name,
        path=model.path or "in memory",
        nodes=count_text(model.node_count),
        producer=model.producer or "unknown",
        inputs=", ".join(f"{t.name} {shape_text(t.shape)} {dtype_name(t.dtype)}" for t in analysis.inputs),
    )


def value_cell(value: float, kind: str, unit: str) -> dict:
    metric = metric_cell(value, kind, unit)
    return {"text": metric["text"], "title": metric["title"], "value": value, "cls": ""}


def not_analysed_cell() -> dict:
    return {"text": "—", "title": "not analysed on this target", "value": None, "cls": "na"}


# ---------------------------------------------------------------------------------------------
# Cells and bars


def metric_cell(value: int | float | None, kind: str, unit: str) -> dict:
    if value is None:
        return {"text": "-", "title": "no bytes move", "value": "", "cls": "na"}
    if kind == "bytes":
        text, title = iec(value), f"{value:,} {unit}"
    elif kind == "ratio":
        text, title = intensity(value), f"{value:.6g} {unit}"
    else:
        text, title = si(value), f"{value:,} {unit}"
    return {"text": text, "title": title, "value": repr(value), "cls": "zero" if value == 0 else ""}


def bar_width(share: float) -> str:
    """A share drawn as a bar: its CSS width, full at 100%."""
    return f"{min(share, 1.0) * 100:.2f}%"


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (invalid JSON) by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
