"""``onnxroof calibrate``: its flags and what it runs (the measuring is :mod:`onnxroof.measure.calibration`,
the file :mod:`onnxroof.report.target_file`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ...core.errors import EXIT_OK, UsageError
from ...core.files import write_atomically
from ...core.units import time_value
from ...measure import calibration as calibrating
from ...measure.calibration import DEFAULT_SECONDS, MIN_SECONDS
from ...measure.machine import size_text
from ...report.target_file import calibrated_target, render_target
from ..options import positive_int

HELP = (
    "measure this machine's compute and memory roofs (ERT/STREAM style) and write a target file; or, with "
    "--from-trace, fit a device's efficiencies and launch cost on its onnxruntime traces"
)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= MIN_SECONDS or math.isinf(value):
        raise argparse.ArgumentTypeError(f"give at least {MIN_SECONDS:g} seconds, not {text!r}")
    return value


def _model_and_trace(text: str) -> tuple[str, str, float | None]:
    """MODEL.onnx=TRACE.json[@LATENCY] (split after ".onnx=" when the text has it: a path may hold
    "="; the latency after the last "@" when what follows it is a time with its unit)."""
    at = text.find(".onnx=")
    model, trace = (text[: at + 5], text[at + 6 :]) if at >= 0 else text.partition("=")[::2]
    latency = None
    head, sign, tail = trace.rpartition("@")
    if sign and (latency := time_value(tail)) is not None:
        trace = head
    elif sign and tail[:1].isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r}: the latency after '@' needs its unit: s, ms or us (like {head}@12.3ms)"
        )
    if not model or not trace:
        raise argparse.ArgumentTypeError(f"expected MODEL.onnx=TRACE.json[@LATENCY], got {text!r}")
    if latency is not None and not latency > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the latency must be more than 0")
    return model, trace, latency


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument(
        "--from-trace",
        action="append",
        default=[],
        type=_model_and_trace,
        metavar="MODEL.onnx=TRACE.json[@LATENCY]",
        help="fit the efficiencies and launch cost of --target's roofs on this model's onnxruntime profile "
        "(SessionOptions.enable_profiling) instead of measuring this machine (repeatable: three or more "
        "models give a held-out error band). onnxruntime's profiler adds about 2 µs to each kernel event it "
        "records, most of a small kernel's time: @LATENCY (e.g. @12.3ms, @450us) is the model's latency timed "
        "without the profiler (session.run, same threads), from which the fit measures that cost on your "
        "device (and, given three or more models of different kernel counts, each run's own cost, which no "
        "trace holds); without any, the cheapest kernel event of the traces is taken as that cost",
    )
    parser.add_argument(
        "--target",
        metavar="NAME|FILE.toml",
        help="with --from-trace: the device's roofs (a bundled target, or a target file of its datasheet peaks "
        "and bandwidths); its efficiencies, launch cost and error band are replaced by the fitted ones",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.toml",
        help="write the target file here (e.g. hardware/this-machine.toml, its folder made if missing); "
        "default: standard output",
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="write it to your targets folder as NAME.toml ($ONNXROOF_TARGETS, else "
        "~/.config/onnxroof/targets), where --target NAME finds it from any folder",
    )
    parser.add_argument(
        "--seconds",
        type=_seconds,
        default=DEFAULT_SECONDS,
        metavar="N",
        help=f"about how long to measure (default {DEFAULT_SECONDS:g}; longer is steadier)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="threads for the matmuls (OpenBLAS) and the bandwidth sweep (default: every usable CPU); "
        "compare with `onnxroof profile --threads N`",
    )
    parser.add_argument(
        "--name", metavar="NAME", help="the target's name (default: the output file's stem, or this-machine)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    from ...roofline.target_paths import check_target_name, target_name_problem, user_target_dir

    if args.save and args.output:
        raise UsageError("--save writes to your targets folder and -o to a file: give one of them")
    # the name is checked before the measuring (it names NAME.toml under --save, and --target NAME)
    name = Path(args.output).stem if args.output and args.output != "-" else "this-machine"
    if args.name is not None:
        name = check_target_name(args.name, "--name")
    elif target_name_problem(name):
        raise UsageError(
            f"-o {args.output}: the file's stem, the target's name by default, "
            f"{target_name_problem(name)}; give --name NAME"
        )
    if args.from_trace and args.name is None and not (args.output and args.output != "-"):
        name = "fitted-device"
    elif args.target and not args.from_trace:
        raise UsageError("--target gives the roofs a --from-trace fit is made on: give --from-trace MODEL=TRACE too")
    if args.save:
        args.output = str(user_target_dir() / f"{name}.toml")
    if args.output:
        folder = Path(args.output).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)  # before the measuring: a folder we cannot make fails fast
        except OSError as error:
            raise UsageError(
                f"-o {args.output}: cannot make the folder {folder} ({error.strerror}); choose another path"
            ) from None
    progress = None if args.quiet else (lambda text: print(f"onnxroof calibrate: {text}", file=sys.stderr, flush=True))
    if args.from_trace:
        return _from_traces(args, name, progress)
    calibration = calibrating.calibrate(seconds=args.seconds, threads=args.threads, progress=progress)
    text = render_target(calibration, name)
    calibrated_target(calibration, name)  # the file must pass the same validation as any target
    if args.output:
        write_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if progress:
        levels = calibration.levels()
        fp32 = calibration.peak("float32")
        assert fp32 is not None
        onchip = (
            f"; on chip {size_text(levels.onchip_bytes)} at {levels.onchip_bytes_per_s / 1e9:.1f} GB/s"
            if levels.onchip_bytes and levels.onchip_bytes_per_s
            else "; no cache plateau found"
        )
        progress(
            f"fp32 {fp32.rate.per_second / 1e9:.1f} GFLOP/s; DRAM {levels.dram_bytes_per_s / 1e9:.1f} GB/s{onchip} "
            f"(took {calibration.seconds:.0f} s)" + (f"; wrote {args.output}" if args.output else "")
        )
    return EXIT_OK


def _from_traces(args: argparse.Namespace, name: str, progress) -> int:
    """``--from-trace``: the fit on the traces (:mod:`onnxroof.measure.trace_fit`), written as a target file."""
    from ...measure.trace_fit import fit_traces
    from ...report.fitted_target import fitted_target, render_fitted_target
    from ...roofline.targets import load_target

    if not args.target:
        raise UsageError(
            "--from-trace needs --target NAME|FILE.toml: the device's roofs (a bundled target, or a target file of "
            "its datasheet peaks and bandwidths) whose efficiencies the traces fit"
        )
    if args.threads is not None:
        raise UsageError("--threads sets this machine's measuring threads; a --from-trace fit measures nothing")
    result = fit_traces(args.from_trace, load_target(args.target), progress)
    text = render_fitted_target(result, name)
    fitted_target(text)  # the file must pass the same validation as any target
    if args.output and args.output != "-":
        write_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if progress:
        gemm, streaming, launch = result.figures
        band = f"held-out error band {result.band:.0%}" if result.band is not None else result.why_no_band
        profiler = result.models[0].profiler_s if result.models else 0.0
        progress(
            f"gemm {gemm:.2f}, streaming {streaming:.2f} of the roofline, {launch * 1e6:.2f} µs per kernel (the "
            f"profiler's {profiler * 1e6:.2f} µs a kernel event taken out: {result.profiler_basis}); {band}"
            + (f"; wrote {args.output}" if args.output and args.output != "-" else "")
        )
    return EXIT_OK
