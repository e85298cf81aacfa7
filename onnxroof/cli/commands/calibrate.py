"""``onnxroof calibrate``: its flags and what it runs (the measuring is :mod:`onnxroof.measure.calibration`,
the file :mod:`onnxroof.report.target_file`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ...core.errors import EXIT_OK, UsageError
from ...core.files import write_atomically
from ...measure import calibration as calibrating
from ...measure.calibration import DEFAULT_SECONDS, MIN_SECONDS
from ...measure.machine import size_text
from ...report.target_file import calibrated_target, render_target

HELP = "measure this machine's compute and memory roofs (ERT/STREAM style) and write a target file"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= MIN_SECONDS or math.isinf(value):
        raise argparse.ArgumentTypeError(f"give at least {MIN_SECONDS:g} seconds, not {text!r}")
    return value


def _threads(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
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
        type=_threads,
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
