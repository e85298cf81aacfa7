"""``onnxroof profile``: its flags and what it runs (the run is :mod:`onnxroof.measure.profile_run`, the
mapping of kernels to nodes :mod:`onnxroof.measure.profiling`), and the target it predicts on."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import EXIT_OK, UsageError
from ...core.files import write_atomically
from ...measure.profile_run import DEFAULT_RUNS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, OPTIMIZATION_LEVELS
from ..options import model_arguments, non_negative_int, positive_int, positive_seconds

if TYPE_CHECKING:
    from ...roofline.targets import Target

CALIBRATED_TARGET = Path("hardware") / "this-machine.toml"
HELP = (
    "run the model with onnxruntime (or read a measured per-layer trace: --trace) and compare each node's "
    "measured time with the predicted one"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    model_arguments(parser, "use a built-in example model")
    parser.add_argument(
        "--runs",
        type=positive_int,
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"measured runs; each node's time is the median (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--warmup",
        type=non_negative_int,
        default=DEFAULT_WARMUP,
        metavar="N",
        help=f"runs before the measured ones, dropped (default {DEFAULT_WARMUP})",
    )
    parser.add_argument(
        "--target",
        metavar="NAME|FILE.toml",
        help=f"predict on this target (default: {CALIBRATED_TARGET} if it exists, else a quick calibration)",
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D1,D2,...",
        help="set an input's shape (repeatable), as for summary",
    )
    parser.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="SYMBOL=VALUE",
        help="bind a named dim everywhere (repeatable), as for summary",
    )
    parser.add_argument("--batch", type=positive_int, metavar="N", help="set axis 0 of every input to N")
    parser.add_argument(
        "--dtype",
        choices=("fp32", "fp16", "bf16", "fp8", "int8", "int4"),
        default="model",
        help="predict as if the model were stored and run in this type, as for summary (default: as stored; "
        "a TensorRT FP16 engine compares best with --dtype fp16)",
    )
    parser.add_argument(
        "--optimization",
        choices=tuple(OPTIMIZATION_LEVELS),
        default="all",
        help="onnxruntime's graph optimization level (default all, what onnxruntime runs by default)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="onnxruntime intra-op threads (default: onnxruntime's, one per physical core)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop onnxruntime if its runs take longer than this, an error (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-memory",
        type=non_negative_int,
        metavar="MIB",
        help="the most memory onnxruntime's process may allocate, in MiB, 0 for no limit (default: 384 MiB "
        "beside twice the parameters and four times the peak activations)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the output to FILE; a FILE ending in .html gets the HTML report with the measured "
        "nodes on the target's roofline",
    )
    parser.add_argument("--keep-profile", metavar="FILE.json", help="also save onnxruntime's raw profile")
    parser.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="FILE",
        help="read a measured per-layer profile instead of running onnxruntime: onnxruntime's profile JSON, "
        "TensorRT trtexec --exportProfile JSON (give its --exportLayerInfo JSON as a second --trace), "
        "OpenVINO benchmark_app detailed_counters CSV, or an RKNN eval_perf table; needs --target "
        "(but for onnxruntime's)",
    )
    parser.add_argument(
        "--trace-format",
        metavar="FORMAT",
        help="the --trace file's format: onnxruntime, tensorrt, openvino or rknn (default: detected from its content)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or warnings on stderr")


def run(args: argparse.Namespace) -> int:
    from ...measure import profile_run as profile
    from ...pipeline import analyze
    from ...report.html.profile_page import render_profile_html
    from ...report.profile_json import profile_document
    from ...report.text.profile_table import render_profile_table

    if args.trace or args.trace_format:
        return run_trace(args)
    profile.import_onnxruntime()  # fail before analysing or calibrating
    source = _model_source(args)
    analysis = analyze(source, input_shapes=args.input_shape, dims=args.dim, batch=args.batch, dtype=args.dtype)
    if not args.quiet:
        for warning in analysis.warnings:
            print(f"onnxroof: warning: {analysis.model.name}: {warning}", file=sys.stderr)
    target, note = resolve_target(args.target, args.quiet)
    result = profile.profile_model(
        analysis,
        target,
        args.runs,
        model=source,
        warmup=args.warmup,
        optimization=args.optimization,
        threads=args.threads,
        keep_profile=args.keep_profile,
        timeout_s=args.timeout,
        max_memory_bytes=None if args.max_memory is None else args.max_memory * 2**20,
    )
    if note:
        result.notes.append(note)
    if args.output and args.output.lower().endswith(".html"):
        text = render_profile_html(result)
    elif args.format == "json":
        text = json.dumps(profile_document(result), indent=2) + "\n"
    else:
        text = render_profile_table(result)
    if args.output:
        write_atomically(args.output, text, inputs=[args.model] if args.model else [])
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _model_source(args: argparse.Namespace) -> Any:
    from ...core.examples import build_example

    if args.example and args.model:
        raise UsageError("give a model path or --example NAME, not both")
    if not (args.example or args.model):
        raise UsageError("no model given; pass a path to an .onnx file or --example NAME")
    if args.example:
        return build_example(args.example)
    if args.model.startswith("example:") and not Path(args.model).exists():
        return build_example(args.model.split(":", 1)[1])
    return args.model


def run_trace(args: argparse.Namespace) -> int:
    """``profile --trace FILE``: a measured per-layer profile beside the prediction, kernel by kernel."""
    from ...measure.trace_compare import compare_trace
    from ...measure.traces import load_trace
    from ...pipeline import analyze
    from ...report.text.trace_table import render_trace_table
    from ...report.trace_json import trace_document

    if not args.trace:
        raise UsageError("--trace-format needs --trace FILE")
    ran = [flag for flag, given in (("--keep-profile", args.keep_profile), ("--threads", args.threads)) if given]
    if ran:
        raise UsageError(f"{' and '.join(ran)}: for the runs profile makes itself, not for a --trace read back")
    source = _model_source(args)
    loaded = load_trace(args.trace, args.trace_format)  # a bad file fails before the analysis
    if loaded[0] != "onnxruntime" and not args.target:
        raise UsageError(
            f"--trace {args.trace[0]}: a {loaded[0]} trace was measured on another machine; name the device "
            "it ran on with --target NAME|FILE.toml (see `onnxroof targets`)"
        )
    analysis = analyze(source, input_shapes=args.input_shape, dims=args.dim, batch=args.batch, dtype=args.dtype)
    if not args.quiet:
        for warning in analysis.warnings:
            print(f"onnxroof: warning: {analysis.model.name}: {warning}", file=sys.stderr)
    target, note = resolve_target(args.target, args.quiet)
    result = compare_trace(analysis, target, args.trace, loaded=loaded)
    if note:
        result.notes.append(note)
    if args.output and args.output.lower().endswith(".html"):
        from ...report.html.profile_page import render_profile_html

        text = render_profile_html(result.as_profile_result())
    elif args.format == "json":
        text = json.dumps(trace_document(result), indent=2) + "\n"
    else:
        text = render_trace_table(result)
    if args.output:
        write_atomically(args.output, text, inputs=[*([args.model] if args.model else []), *args.trace])
    else:
        sys.stdout.write(text)
    return EXIT_OK


def resolve_target(name_or_path: str | None, quiet: bool = False) -> tuple[Target, str | None]:
    """The target to predict on, and a note when it had to be calibrated on the spot."""
    from ...measure import calibration
    from ...report.target_file import calibrated_target
    from ...roofline.targets import load_target, parse_target, target_files

    if name_or_path:
        return load_target(name_or_path), None
    calibrated = target_files().get(CALIBRATED_TARGET.stem)  # ./hardware, your targets folder, a checkout's
    if calibrated is not None:
        return parse_target(calibrated), None
    progress = (
        None if quiet else (lambda text: print(f"onnxroof profile: calibrating: {text}", file=sys.stderr, flush=True))
    )
    quick = calibration.QUICK_SECONDS
    if progress:
        progress(
            f"no --target and no calibrated {CALIBRATED_TARGET.stem} target: a {quick:g} s calibration "
            "(`onnxroof calibrate --save` measures better, once)"
        )
    measured = calibration.calibrate(seconds=quick, progress=progress)
    return calibrated_target(measured), (
        f"predicted on a {quick:g} s calibration of this machine; run `onnxroof calibrate --save` for steadier roofs"
    )
