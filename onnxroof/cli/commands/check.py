"""``onnxroof check``: one line per model (its totals, each target's latency, its budgets), for
pre-commit hooks and CI, and for auditing a model store: ``--jobs N`` analyses N at a time in
worker processes, ``--timeout`` gives each a time limit, and ``--format jsonl`` writes a JSON
object per model; every line is written as its model finishes."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import sys
import time
import traceback
from pathlib import Path

from ...core.errors import EXIT_BUDGET, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, OnnxroofError, UnboundDims, sigterm_stops
from ...core.files import LineStream
from ...core.text import one_line
from ..analysing import Analysing, analyze_source
from ..options import EXAMPLES, analysis_options, budget_option, positive_int, positive_seconds
from ..output import error_text

HELP = "check models against budgets, one line each (pre-commit, CI, a model store)"
EPILOG = EXAMPLES["check"]
SCHEMA = "onnxroof-check/1"
# each status and the exit code it gives the run (the run's is the highest)
EXIT_CODES = {
    "ok": EXIT_OK,
    "budget_broken": EXIT_BUDGET,
    "error": EXIT_USAGE,
    "timeout": EXIT_USAGE,
    "died": EXIT_USAGE,
    "internal_error": EXIT_INTERNAL,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument("models", nargs="+", help="paths, folders (every .onnx file under them), or example:NAME")
    analysis_options(parser)
    budget_option(parser, relative=False)
    many = parser.add_argument_group("many models")
    many.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="analyse N models at a time, each in a worker process; lines come as models finish "
        "(default 1: one at a time, in order, in this process)",
    )
    many.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="give each model at most SECONDS (it runs in a worker process): one over it is reported "
        "as such, and the run goes on",
    )
    many.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help=f"text (a line per model) or jsonl (a JSON object per line, {SCHEMA})",
    )
    many.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the lines to a new FILE.XXXXXXXX.partial as models finish, renamed to FILE once "
        "every "
        "model is done (a stopped run leaves it, named on stderr: whole lines, the models done)",
    )


def run(args: argparse.Namespace) -> int:
    """One line per model; exit 2 if a model cannot be analysed (or is over its time limit, or
    its worker died), else 1 if a budget is broken; 3 if onnxroof failed on one."""
    from ...compare.budgets import parse_budget

    budgets = [parse_budget(text) for text in args.fail_if]
    sources, missing = models_of(args.models)
    stream = LineStream(args.output, inputs=sources)
    worst = EXIT_OK
    jsonl = args.format == "jsonl"
    tally: dict[str, int] = {}  # each kind of outcome (tally_kind) -> how many models

    def write(record: dict) -> None:
        nonlocal worst
        try:
            line = json.dumps(record, ensure_ascii=False) if jsonl else text_line(record)
        except Exception as exc:  # a bug in writing this model's line: the line says so, and the run goes on
            record = failed(str(record.get("model")), "internal_error", _internal(exc, args.debug))
            line = json.dumps(record, ensure_ascii=False) if jsonl else text_line(record)
        stream.write(line)
        worst = max(worst, EXIT_CODES[record["status"]])
        tally[tally_kind(record)] = tally.get(tally_kind(record), 0) + 1

    try:
        with sigterm_stops():  # exit 143, SIGTERM's, the lines done kept
            for record in missing:
                write(record)
            for record in records(sources, args, budgets):
                write(record)
    except KeyboardInterrupt:
        stream.close()
        if stream.partial is not None:
            print(
                one_line(f"onnxroof: stopped: the {stream.lines} model(s) done are in {stream.partial}"),
                file=sys.stderr,
            )
        raise
    if worst != EXIT_OK or not args.quiet:  # the counts for a person; the lines stay one per model, for parsers
        print(one_line(f"onnxroof check: {tally_line(tally)}"), file=sys.stderr)
    stream.finish()
    return worst


# each kind of outcome in the totals line, in this order, and what to do about it
TALLY_WORDS = {
    "ok": ("ok", ""),
    "budget_broken": ("over budget", ""),
    "needs_dims": (
        "need dims",
        "add --dim NAME=N (each line names its dims; check such models "
        "apart, or give each its own flags with the Action's model-options)",
    ),
    "error": ("errors", ""),
    "timeout": ("over the time limit", ""),
    "died": ("died", ""),
    "internal_error": ("internal errors", ""),
}


def tally_kind(record: dict) -> str:
    """A record's kind in the totals: its status, a model needing dims apart from other errors."""
    return "needs_dims" if record.get("needs_dims") else record["status"]


def tally_line(tally: dict[str, int]) -> str:
    """``21 models: 10 ok, 11 need dims: add --dim NAME=N ...``."""
    models = sum(tally.values())
    parts = [
        f"{tally[kind]} {words}" + (f": {advice}" if advice else "")
        for kind, (words, advice) in TALLY_WORDS.items()
        if tally.get(kind)
    ]
    return f"{models} model{'' if models == 1 else 's'}: {'; '.join(parts) or 'none'}"


def models_of(sources: list[str]) -> tuple[list[str], list[dict]]:
    """The models the arguments name, a folder standing for every .onnx file under it (sorted);
    and an error record for each folder that holds none."""
    found, missing = [], []
    for source in sources:
        folder = Path(source)
        if not source.startswith("example:") and folder.is_dir():
            models = sorted(str(path) for path in folder.rglob("*.onnx") if path.is_file())
            found += models
            if not models:
                missing.append(
                    failed(
                        source,
                        "error",
                        f"{source}: no .onnx file under this folder; give a folder "
                        "that holds models, or the models' paths",
                    )
                )
        else:
            found.append(source)
    return found, missing


def records(sources: list[str], args: argparse.Namespace, budgets: list):
    """Each model's record, as each finishes: here one by one, or in worker processes."""
    try:
        asked = Analysing.from_flags(args, several_models=True)
    except OnnxroofError as exc:  # the flags' options: every model's error, as each analysis would find
        for source in sources:
            yield failed(source, "error", error_text(exc))
        return
    if args.jobs <= 1 and args.timeout is None:
        # the collector on between models (the program turns it off for one big analysis): each
        # analysis leaves some cyclic garbage, which over hundreds of models adds up
        collecting = gc.isenabled()
        gc.enable()
        try:
            for source in sources:
                yield check_one(asked, budgets, source)
        finally:
            if not collecting:
                gc.disable()
        return
    from ..workers import run_in_workers

    _prepare(())  # the pipeline imported once, before the workers fork from this process
    # the flags go to each worker once, as it starts; each model is then only its path
    for outcome in run_in_workers(
        functools.partial(check_one, asked, budgets),
        sources,
        jobs=min(args.jobs, len(sources)) or 1,
        timeout=args.timeout,
        initializer=functools.partial(_prepare, tuple(args.plugin)),
    ):
        source = outcome.item
        if outcome.failure is None:
            yield outcome.result
        elif outcome.kind == "raised":  # check_one itself failed, in the worker: a bug in onnxroof
            yield failed(
                source, "internal_error", f"{outcome.failure} (rerun with --debug and report it)", outcome.seconds
            )
        elif outcome.kind == "timeout":
            yield failed(
                source,
                "timeout",
                f"{source}: {outcome.failure} (--timeout): give it more time, or analyse it alone",
                outcome.seconds,
            )
        else:
            yield failed(
                source,
                "died",
                f"{source}: {outcome.failure}; analyse it alone to see why (onnxroof check {source})",
                outcome.seconds,
            )


def check_one(asked: Analysing, budgets: list, source: str) -> dict:
    """One model's record: its totals, targets and budgets, or the error that stopped it. It
    raises nothing but an interrupt: any failure (a bug in onnxroof, a plugin that calls
    sys.exit) is this model's record, and the run goes on."""
    start = time.monotonic()
    try:
        return _record(asked, budgets, source, start)
    except UnboundDims as exc:  # the user's values are needed: counted apart in the totals
        return {
            **failed(source, "error", error_text(exc), time.monotonic() - start),
            "needs_dims": exc.symbols() or [d.fix for d in exc.dims],
        }
    except OnnxroofError as exc:
        return failed(source, "error", error_text(exc), time.monotonic() - start)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a bug in onnxroof (or a plugin's exit): this model's line says so
        return failed(source, "internal_error", _internal(exc, asked.debug), time.monotonic() - start)


def _internal(exc: BaseException, debug: bool) -> str:
    """An internal error as a model's line (its traceback on stderr with --debug)."""
    if debug:
        traceback.print_exception(exc)
    return f"{type(exc).__name__}: {exc} (rerun with --debug and report it)"


def _record(asked: Analysing, budgets: list, source: str, start: float) -> dict:
    from ...compare.budgets import check_budgets

    analysis = analyze_source(source, asked)
    results = check_budgets(budgets, analysis)
    totals = analysis.totals
    return {
        "schema": SCHEMA,
        "model": source,
        "status": "budget_broken" if any(r.broken for r in results) else "ok",
        "name": analysis.model.name,
        "complete": analysis.complete,
        "totals": {
            "params": totals.params,
            "param_bytes": totals.param_bytes,
            "macs": totals.macs,
            "mac_flops": totals.mac_flops,
            "flops": totals.flops,
            "nodes": totals.nodes,
            "counted_nodes": totals.counted_nodes,
        },
        "peak_bytes": analysis.memory.model_order.peak_bytes,
        "targets": [
            {
                "name": r.target.name,
                "latency_s": finite(r.latency_s),
                "latency_kind": str(getattr(r.latency_kind, "value", r.latency_kind)),
                "borrowed": sorted(r.borrowed),  # figures taken from other targets
                # false: nodes not counted, latency_s is at least a bound (bound_reason says why)
                "complete": r.complete,
                "missing": r.missing,
                "bound_reason": r.bound_reason,
            }
            for r in analysis.targets
        ],
        "budgets": [
            {
                "budget": r.budget.text,
                "value": finite(r.value),
                "broken": r.broken,
                "text": r.describe(),
                "bound": bool(r.missing),
            }
            for r in results
        ],
        "warnings": list(analysis.warnings),
        "seconds": round(time.monotonic() - start, 3),
    }


def failed(source: str, status: str, error: str, seconds: float = 0.0) -> dict:
    """The record of a model with no numbers: why, in one line."""
    return {"schema": SCHEMA, "model": source, "status": status, "error": one_line(error), "seconds": round(seconds, 3)}


def text_line(record: dict) -> str:
    """A record as check's line."""
    from ...core.units import iec, seconds, si

    source = record["model"]
    if "error" in record:
        # the error names the model as its file: once is enough, on the line's left
        error = record["error"]
        for prefix in (f"{source}: ", f"{Path(source).name}: ", f"{Path(source).stem}: "):
            error = error[len(prefix) :] if error.startswith(prefix) else error
        kind = "internal error" if record["status"] == "internal_error" else "error"
        return one_line(f"{source}: {kind}: {error}")
    totals, results = record["totals"], record["budgets"]
    broken = [r for r in results if r["broken"]]
    # a target that left nodes out: its latency is a bound, said as one ("≥ 5.06 µs (2 node(s) not counted)")
    latencies = "".join(
        f", latency[{t['name']}] "
        + (
            f"{seconds(t['latency_s'] or 0.0)}"
            if t.get("complete", True)
            else f"≥ {seconds(t['latency_s'] or 0.0)} ({t['missing']})"
        )
        for t in record["targets"]
    )
    verdict = (
        f"; {'; '.join(r['text'] for r in broken)}" if broken else f"; {len(results)} budget(s) hold" if results else ""
    )
    return one_line(
        f"{source}: params {si(totals['params'])}, MAC-FLOPs {si(totals['mac_flops'])}, "
        f"peak {iec(record['peak_bytes'])}{latencies}{verdict}"
    )


def finite(value: float) -> float | None:
    """A number for JSON, which has no infinity or NaN: those are null."""
    return value if isinstance(value, int) or math.isfinite(value) else None


def _prepare(plugins: tuple[str, ...]) -> None:
    """A worker's start: the pipeline imported, and the --plugin files loaded unless the worker
    has them already (forked from a process that loaded them)."""
    import onnxroof.findings  # noqa: F401

    from ...ops.plugins import load_plugin_file

    for plugin in plugins:
        if f"onnxroof_plugin_{Path(plugin).stem}" not in sys.modules:
            load_plugin_file(plugin)
