#!/usr/bin/env python3
"""Models whose shape computations would write far more than they read (issue 43, item 1), and
`profile` on models it cannot run whole (item 8): each is built here, written to a folder, and
run through the commands named, each run timed (wall and CPU seconds) with its peak resident
memory (the command's process and its children, from wait4).

    python benchmarks/evaluator_bombs.py                    # every model, summary check report diff
    python benchmarks/evaluator_bombs.py --only concat --keep /tmp/bombs   # one model, its files kept
    python benchmarks/evaluator_bombs.py --checkout /work/main --commands summary   # another checkout's code

Acceptance: every run exits 0 or 2 with at most one line on stderr, within 10 s and 500 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
I64 = np.int64
COMMANDS = ("summary", "check", "report", "diff")


def _const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), f"{name}_value"))


def _model(nodes, inputs=(), outputs=None, initializers=()) -> onnx.ModelProto:
    """``nodes`` ending in a tensor ``y`` whose Shape is the model's output (unless ``outputs``)."""
    if outputs is None:
        nodes = [*nodes, helper.make_node("Shape", ["y"], ["s"])]
        outputs = [helper.make_tensor_value_info("s", TensorProto.INT64, [None])]
    graph = helper.make_graph(nodes, "bomb", list(inputs), outputs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def evaluator_models() -> dict[str, onnx.ModelProto]:
    """name -> model; each output would take gigabytes if the evaluator computed it."""
    models = {
        # one 4,096-element constant listed 100,000 times: 409,600,000 int64 (3.2 GB)
        "concat": _model([_const("c", np.arange(4096, dtype=I64)),
                          helper.make_node("Concat", ["c"] * 100_000, ["y"], axis=0)]),
        # the same, and one input ONNX cannot size, so the Concat is inferred again alone
        "concat-reinferred": _model([_const("c", np.arange(4096, dtype=I64)), _const("m", np.array([0, 1, 1], I64)),
                                     helper.make_node("NonZero", ["m"], ["nz"]), _const("flat", np.array([-1], I64)),
                                     helper.make_node("Reshape", ["nz", "flat"], ["u"]),
                                     helper.make_node("Concat", ["c"] * 100_000 + ["u"], ["y"], axis=0)]),
        # a Max of one 4,096-element value listed 100,000 times: a small output, 409,600,000 reads
        "max-listed": _model([_const("c", np.arange(4096, dtype=I64)), helper.make_node("Max", ["c"] * 100_000, ["y"])]),
        # [1, 4096] by 4,096 indices: [4096, 4096]
        "gather": _model([_const("d", np.zeros((1, 4096), I64)), _const("i", np.zeros(4096, I64)),
                          helper.make_node("Gather", ["d", "i"], ["y"], axis=0)]),
        "gathernd": _model([_const("d", np.zeros((1, 4096), I64)), _const("i", np.zeros((4096, 1), I64)),
                            helper.make_node("GatherND", ["d", "i"], ["y"])]),
        # [4096,1,1] x [1,4096,1] x [1,1,4096]: 6.9 x 10^10 elements
        "where": _model([_const("c", np.ones((4096, 1, 1), bool)), _const("a", np.zeros((1, 4096, 1), I64)),
                         _const("b", np.zeros((1, 1, 4096), I64)), helper.make_node("Where", ["c", "a", "b"], ["y"])]),
        "expand": _model([_const("x", np.zeros(1, I64)), _const("shape", np.array([2**20, 2**20], I64)),
                          helper.make_node("Expand", ["x", "shape"], ["y"])]),
        "tile": _model([_const("x", np.zeros(4096, I64)), _const("r", np.array([10**9], I64)),
                        helper.make_node("Tile", ["x", "r"], ["y"])]),
        "range": _model([_const("a", np.array(0, I64)), _const("b", np.array(10**12, I64)), _const("d", np.array(1, I64)),
                         helper.make_node("Range", ["a", "b", "d"], ["y"])]),
        "constant-of-shape": _model([_const("shape", np.array([2**20, 2**20], I64)),
                                     helper.make_node("ConstantOfShape", ["shape"], ["y"])]),
        # a sum over the empty axis of [0, 10^12]: 10^12 zeros
        "reduce-empty": _model([_const("x", np.zeros((0, 10**12), I64)), _const("axes", np.array([0], I64)),
                                helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]),
    }
    # 10,000 distinct 4,096-element values, each small: their total is what must be bounded
    nodes = [_const("base", np.arange(4096, dtype=I64))]
    for k in range(10_000):
        nodes += [_const(f"k{k}", np.array(k, I64)), helper.make_node("Add", ["base", f"k{k}"], [f"v{k}"])]
    models["many-values"] = _model(nodes + [helper.make_node("Identity", [f"v{k}"], ["y"])])
    return models


def _loop(trips: int, shape: list[int]) -> onnx.ModelProto:
    """A Loop of ``trips`` trips whose body adds 1 to a float tensor of ``shape``."""
    f32, boolean = TensorProto.FLOAT, TensorProto.BOOL
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", boolean, []), helper.make_tensor_value_info("v_in", f32, shape)],
        [helper.make_tensor_value_info("cond_out", boolean, []), helper.make_tensor_value_info("v_out", f32, shape)],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    return _model([helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body, name="loop")],
                  [helper.make_tensor_value_info("x", f32, shape)], [helper.make_tensor_value_info("y", f32, shape)],
                  [("trips", np.array(trips, I64)), ("cond", np.array(True))])


def profile_models() -> dict[str, onnx.ModelProto]:
    """name -> model for `profile` (run with --timeout 5): an input of 4 TiB; a Loop of 10^15 trips;
    one of 10^4 trips over [1024, 1024], about 9 s a run here, which only the time limit stops."""
    f32 = TensorProto.FLOAT
    huge = [helper.make_tensor_value_info("x", f32, [2**20, 2**20])]
    return {
        "profile-huge-input": _model([helper.make_node("Relu", ["x"], ["y"], name="r")], huge,
                                     [helper.make_tensor_value_info("y", f32, [2**20, 2**20])]),
        "profile-endless-loop": _loop(10**15, [1]),
        "profile-long-loop": _loop(10**4, [1024, 1024]),
    }


def measured(argv: list[str], cwd: Path) -> tuple[int, float, float, int, str]:
    """(exit code, wall seconds, CPU seconds, peak RSS in bytes, stderr) of one run."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        text = err.read().decode(errors="replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="run only this model (repeatable)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="commands to run (default: %(default)s)")
    parser.add_argument("--keep", metavar="DIR", help="write the models here and keep them")
    parser.add_argument("--checkout", metavar="DIR", default=str(ROOT),
                        help="run the onnxroof of this checkout (default: this one), to compare before and after")
    args = parser.parse_args(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="onnxroof-bombs-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, model in {**evaluator_models(), **profile_models()}.items():
        if args.only and name not in args.only:
            continue
        path = folder / f"{name}.onnx"
        onnx.save(model, path)
        cli = [sys.executable, "-m", "onnxroof.cli"]
        if name.startswith("profile-"):
            runs.append((name, "profile", cli + ["profile", str(path), "--target", "l4", "--timeout", "5"]))
            continue
        for command in args.commands.split(","):
            tail = [str(path), str(path)] if command == "diff" else [str(path), "-o", str(folder / f"{name}.{command}")]
            runs.append((name, command, cli + [command, *tail]))
    print(f"{'model':22} {'command':8} exit   wall s  cpu s  peak MB  stderr")
    failed = 0
    for name, command, run in runs:
        code, wall, cpu, peak, err = measured(run, Path(args.checkout))
        lines = [line for line in err.splitlines() if line.strip() and not line.rstrip().endswith("s)")]  # progress
        ok = code in (0, 2) and len(lines) <= 1 and wall <= 10 and peak <= 500 * 2**20
        failed += not ok
        print(f"{name:22} {command:8} {code:4} {wall:8.2f} {cpu:6.2f} {peak / 2**20:8.0f}  "
              f"{'' if ok else 'FAIL '}{(lines[-1] if lines else '')[:100]}")
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
