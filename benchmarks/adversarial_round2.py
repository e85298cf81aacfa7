"""Issue 43's families of hostile input, for benchmarks/adversarial.py: evaluator output bombs
(43.1), deep module paths (43.2), long chains and nested functions through the kernel outlines
(43.3), fan-in joins (43.4), a hostile ./hardware folder (43.5), ``check -o`` races and planted
symlinks (43.6), control characters through ``graph`` (43.7), ``profile`` on hostile models
(43.8), the PR Action's script on odd file names (43.9), plugin rules that raise (43.10),
``calibrate --name`` (43.11), small ones (43.12) and findings on large models (43.13).

Every case is built by code from its name alone and held to the issue's budget (see
adversarial.py's ``_budget_problems``); the checks particular to a family are the ``check``
functions below, each returning the problems it saw.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from adversarial import ESCAPE, F32, I64, ROOT, SENTINEL, Case, Run, model_bytes
from adversarial_running import CHECKOUT

n = helper.make_node
OPSET = [helper.make_opsetid("", 17)]


def case(family: str, name: str, how: str, files: dict, runs: list, setup=None) -> Case:
    return Case(name, "round2", how, files, runs, family=family, budget=True, setup=setup)


# ---------------------------------------------------------------------------------------------
# Models


def constant(name: str, array: np.ndarray):
    return n("Constant", [], [name], name=f"const_{name}", value=numpy_helper.from_array(np.asarray(array), name))


def bomb_model(nodes: list, result: str, opset: int = 17) -> bytes:
    """x -> Relu -> y beside a constant subgraph ending in ``result``, whose Shape is an output:
    the evaluator meets the bomb while the model itself is a few KB."""
    body = [n("Relu", ["x"], ["y"], name="relu"), *nodes, n("Shape", [result], ["shape"], name="shape")]
    return model_bytes(body, [("x", F32, [1, 16])], [("y", F32, [1, 16]), ("shape", I64, [None])], opset=opset)


def evaluator_bombs() -> dict[str, tuple[str, bytes]]:
    """name -> (how, model): ops whose output outgrows their inputs, on constants the evaluator keeps
    (at most 4,096 elements each)."""
    c = np.arange(4096, dtype=np.int64)
    bombs = {}
    for count in (10_000, 100_000):
        bombs[f"concat-{count}"] = (f"Concat listing a 4,096-element int64 Constant {count:,} times, then Shape",
                                    bomb_model([constant("c", c), n("Concat", ["c"] * count, ["t"], axis=0)], "t"))
    bombs["concat-axis1-100000"] = ("Concat on axis 1 of a [1,4096] Constant listed 100,000 times", bomb_model(
        [constant("c", c.reshape(1, 4096)), n("Concat", ["c"] * 100_000, ["t"], axis=1)], "t"))
    for op in ("Max", "Min"):  # a 4,096-element output, but 100,000 inputs of 32 KB for the evaluator to look at
        bombs[f"{op.lower()}-100000"] = (f"{op} of a 4,096-element int64 Constant listed 100,000 times", bomb_model(
            [constant("c", c), n(op, ["c"] * 100_000, ["t"])], "t"))
    bombs["gather-4096x4096"] = ("Gather of a [1,4096] Constant with 4,096 zero indices ([4096,4096] int64)", bomb_model(
        [constant("c", c.reshape(1, 4096)), constant("i", np.zeros(4096, np.int64)), n("Gather", ["c", "i"], ["t"])], "t"))
    bombs["gathernd-4096x4096"] = ("GatherND of a [1,4096] Constant with [4096,1] zero indices", bomb_model(
        [constant("c", c.reshape(1, 4096)), constant("i", np.zeros((4096, 1), np.int64)),
         n("GatherND", ["c", "i"], ["t"])], "t"))
    bombs["expand-100000"] = ("Expand of a [4096] Constant to [100000,4096]", bomb_model(
        [constant("c", c), constant("s", np.array([100_000, 4096], np.int64)), n("Expand", ["c", "s"], ["t"])], "t"))
    bombs["tile-100000"] = ("Tile of a [4096] Constant 100,000 times", bomb_model(
        [constant("c", c), constant("r", np.array([100_000], np.int64)), n("Tile", ["c", "r"], ["t"])], "t"))
    bombs["range-1e9"] = ("Range(0, 10^9, 1) in int64", bomb_model(
        [constant("a", np.array(0, np.int64)), constant("b", np.array(10**9, np.int64)),
         constant("d", np.array(1, np.int64)), n("Range", ["a", "b", "d"], ["t"])], "t"))
    bombs["range-float-tiny-step"] = ("Range(0, 1, 1e-9) in float32", bomb_model(
        [constant("a", np.array(0, np.float32)), constant("b", np.array(1, np.float32)),
         constant("d", np.array(1e-9, np.float32)), n("Range", ["a", "b", "d"], ["t"])], "t"))
    bombs["nonzero-ones"] = ("NonZero of ConstantOfShape([64,64]) ones", bomb_model(
        [constant("s", np.array([64, 64], np.int64)),
         n("ConstantOfShape", ["s"], ["o"], value=numpy_helper.from_array(np.array([1], np.int64))),
         n("NonZero", ["o"], ["t"])], "t"))
    for label, pads in (("1e9", 10**9), ("2^40", 2**40)):
        bombs[f"pad-{label}"] = (f"Pad of a [4096] Constant with pads [0, {pads}]", bomb_model(
            [constant("c", c), constant("p", np.array([0, pads], np.int64)), n("Pad", ["c", "p"], ["t"])], "t"))
    bombs["constantofshape-2^20x2^20"] = ("ConstantOfShape([2^20, 2^20])", bomb_model(
        [constant("s", np.array([2**20, 2**20], np.int64)), n("ConstantOfShape", ["s"], ["t"])], "t"))
    bombs["onehot-1e6"] = ("OneHot of 4,096 indices with depth 10^6", bomb_model(
        [constant("c", c), constant("d", np.array(10**6, np.int64)), constant("v", np.array([0, 1], np.int64)),
         n("OneHot", ["c", "d", "v"], ["t"])], "t"))
    bombs["resize-1000x"] = ("Resize of a [1,1,64,64] Constant by scales [1,1,1000,1000]", bomb_model(
        [constant("c", np.ones((1, 1, 64, 64), np.float32)), constant("s", np.array([1, 1, 1000, 1000], np.float32)),
         n("Resize", ["c", "", "s"], ["t"])], "t"))
    bombs["einsum-outer"] = ("Einsum i,j->ij of two 4,096-element Constants", bomb_model(
        [constant("a", np.ones(4096, np.float32)), constant("b", np.ones(4096, np.float32)),
         n("Einsum", ["a", "b"], ["t"], equation="i,j->ij")], "t"))
    bombs["matmul-outer"] = ("MatMul [4096,1] x [1,4096] of Constants", bomb_model(
        [constant("a", np.ones((4096, 1), np.float32)), constant("b", np.ones((1, 4096), np.float32)),
         n("MatMul", ["a", "b"], ["t"])], "t"))
    bombs.update(mid_size_bombs(c))
    return bombs


def mid_size_bombs(c: np.ndarray) -> dict[str, tuple[str, bytes]]:
    """Outputs of 0.4 to 1.6 GB: under the 2 GB address-space cap, so an op run before its size is
    predicted shows as peak RSS rather than as a failed allocation."""
    f = lambda *shape: np.ones(shape, np.float32)  # noqa: E731
    return {
        "pad-1e8": ("Pad of a [4096] Constant with pads [0, 10^8] (800 MB of int64)", bomb_model(
            [constant("c", c), constant("p", np.array([0, 10**8], np.int64)), n("Pad", ["c", "p"], ["t"])], "t")),
        "onehot-30000": ("OneHot of 4,096 indices with depth 30,000 (983 MB of int64)", bomb_model(
            [constant("c", c), constant("d", np.array(30_000, np.int64)), constant("v", np.array([0, 1], np.int64)),
             n("OneHot", ["c", "d", "v"], ["t"])], "t")),
        "resize-sizes-16000": ("Resize of a [1,1,64,64] Constant to sizes [1,1,16000,16000] (1 GB of float32)", bomb_model(
            [constant("c", f(1, 1, 64, 64)), constant("s", np.array([1, 1, 16_000, 16_000], np.int64)),
             n("Resize", ["c", "", "", "s"], ["t"])], "t")),
        "einsum-outer3": ("Einsum i,j,k->ijk of [4096], [4096], [16] Constants (1 GB of float32)", bomb_model(
            [constant("a", f(4096)), constant("b", f(4096)), constant("k", f(16)),
             n("Einsum", ["a", "b", "k"], ["t"], equation="i,j,k->ijk")], "t")),
        "centercroppad-1e8": ("CenterCropPad of a [4096] Constant to [10^8] (800 MB of int64)", bomb_model(
            [constant("c", c), constant("s", np.array([10**8], np.int64)), n("CenterCropPad", ["c", "s"], ["t"])], "t", opset=18)),
        "roialign-1e4": ("RoiAlign of a [1,1,8,8] Constant with output 10^4 x 10^4 (400 MB of float32)", bomb_model(
            [constant("x8", f(1, 1, 8, 8)), constant("r", np.array([[0, 0, 4, 4]], np.float32)),
             constant("bi", np.array([0], np.int64)),
             n("RoiAlign", ["x8", "r", "bi"], ["t"], output_height=10_000, output_width=10_000)], "t")),
        "convtranspose-stride-5000": ("ConvTranspose of a [1,1,4,4] Constant with strides 5000 (1.6 GB of float32)",
                                      bomb_model([constant("x4", f(1, 1, 4, 4)), constant("w", f(1, 1, 1, 1)),
                                                  n("ConvTranspose", ["x4", "w"], ["t"], strides=[5000, 5000])], "t")),
        "randomnormal-1e8": ("RandomNormal with shape [10^8] (400 MB of float32), no input", bomb_model(
            [n("RandomNormal", [], ["t"], shape=[10**8])], "t")),
        "maxunpool-1e8": ("MaxUnpool of a [1,1,2,2] Constant to output_shape [1,1,10^4,10^4]", bomb_model(
            [constant("x2", f(1, 1, 2, 2)), constant("ix", np.array([0, 1, 2, 3], np.int64).reshape(1, 1, 2, 2)),
             constant("os", np.array([1, 1, 10_000, 10_000], np.int64)),
             n("MaxUnpool", ["x2", "ix", "os"], ["t"], kernel_shape=[2, 2], strides=[2, 2])], "t")),
    }


@functools.lru_cache(maxsize=None)
def relu_chain(length: int, names: tuple = ()) -> bytes:
    nodes = [n("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}" if i + 1 < length else "y"],
               name=names[i] if names else f"r{i}") for i in range(length)]
    return model_bytes(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 16])])


@functools.lru_cache(maxsize=None)
def fan_in(branches: int, join: str = "Sum") -> bytes:
    nodes = [n("Relu", ["x"], [f"b{i}"], name=f"r{i}") for i in range(branches)]
    attributes = {"axis": 0} if join == "Concat" else {}
    nodes.append(n(join, [f"b{i}" for i in range(branches)], ["y"], name="join", **attributes))
    out = [branches, 16] if join == "Concat" else [1, 16]
    return model_bytes(nodes, [("x", F32, [1, 16])], [("y", F32, out)])


@functools.lru_cache(maxsize=None)
def nested_functions(levels: int) -> bytes:
    """f0 = Relu, f(k) calls f(k-1) twice: 2^(levels-1) Relus once inlined, a 2 KB file."""
    fns = [helper.make_function("adv", "f0", ["x"], ["y"], [n("Relu", ["x"], ["y"])], OPSET)]
    for level in range(1, levels):
        fns.append(helper.make_function("adv", f"f{level}", ["x"], ["y"],
                                        [n(f"f{level - 1}", ["x"], ["t"], domain="adv"),
                                         n(f"f{level - 1}", ["t"], ["y"], domain="adv")],
                                        [*OPSET, helper.make_opsetid("adv", 1)]))
    return model_bytes([n(f"f{levels - 1}", ["x"], ["y"], domain="adv", name="top")], [("x", F32, [1, 16])],
                       [("y", F32, [1, 16])], functions=fns, extra_opsets=[helper.make_opsetid("adv", 1)])


def deep_paths(depth: int, nodes: int = 4) -> bytes:
    """``nodes`` Relus in a chain, each named /m0/m1/.../m{depth-1}/reluK (one shared path)."""
    prefix = "/" + "/".join(f"m{i % 10}" for i in range(depth))
    return relu_chain(nodes, tuple(f"{prefix}/relu{k}" for k in range(nodes)))


def staircase(count: int) -> bytes:
    """Node i named /s/s/... (i levels)/relu: a module tree as deep as the model is long."""
    return relu_chain(count, tuple("/s" * i + f"/relu{i}" for i in range(count)))


def alike_blocks(blocks: int) -> bytes:
    """/layer.K/{fc,act} blocks of one structure: their module views fold into one."""
    nodes, previous = [], "x"
    for k in range(blocks):
        nodes += [n("MatMul", [previous, "w"], [f"h{k}"], name=f"/layer.{k}/fc/MatMul"),
                  n("Relu", [f"h{k}"], [f"a{k}"], name=f"/layer.{k}/act/Relu")]
        previous = f"a{k}"
    nodes.append(n("Identity", [previous], ["y"], name="/head/Identity"))
    return model_bytes(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 16])], [("w", np.eye(16, dtype=np.float32))])


def named(text: str) -> bytes:
    """A hostile ``text`` as a node name, a module path, a tensor name, a dim name and the graph's name."""
    nodes = [n("Relu", [text], ["r"], name=text), n("Add", ["r", "r"], [f"{text}out"], name=f"/{text}/add"),
             n("MatMul", [f"{text}out", "w"], ["y"], name=f"/{text}/{text}/mm")]
    return model_bytes(nodes, [(text, F32, [text, 16])], [("y", F32, [text, 16])],
                       [("w", np.eye(16, dtype=np.float32))], name=text)


def loop_model(trips: int) -> bytes:
    body = helper.make_graph([n("Identity", ["cond"], ["co"]), n("Relu", ["v"], ["vo"])], "body",
                             [helper.make_tensor_value_info("i", I64, []),
                              helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v", F32, [1, 8])],
                             [helper.make_tensor_value_info("co", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("vo", F32, [1, 8])])
    return model_bytes([n("Loop", ["M", "", "x"], ["y"], name="loop", body=body)], [("x", F32, [1, 8])],
                       [("y", F32, [1, 8])], [("M", np.array(trips, np.int64))])


def shadow_l4() -> bytes:
    """The bundled l4.toml with a launch cost of 1 ps and a thousandfold DRAM: a PR's hardware/l4.toml."""
    text = (ROOT / "hardware" / "l4.toml").read_text()
    text = re.sub(r"(\[node_overhead_s\]\nvalue = )[^\n]+", r"\g<1>1e-12", text)
    text = re.sub(r"(\[dram\.bandwidth_bytes_per_s\]\nvalue = )[^\n]+", r"\g<1>300e15", text)
    return text.encode()


# ---------------------------------------------------------------------------------------------
# Checks particular to a family: (record, directory) -> problems


def names_file(argv: list, *needles: str):
    """The output (stdout, stderr or -o file) says which file the target came from, unless the
    target file was not used: the same command from a folder without ./hardware prints the same."""
    def check(record: dict, directory: Path) -> list[str]:
        texts = [(directory / ".stdout").read_text("utf-8", "replace"), (directory / ".stderr").read_text("utf-8", "replace")]
        texts += [p.read_text("utf-8", "replace") for p in directory.glob("out.*") if p.is_file()]
        if record["code"] != 0 or any(needle in text for text in texts for needle in needles):
            return []
        clean = directory / "clean"
        clean.mkdir(exist_ok=True)
        args = [a.replace("{dir}/out.", "{dir}/clean/out.").replace("{dir}", str(directory)) for a in argv]
        env = {**os.environ, "PYTHONPATH": str(CHECKOUT["path"]), "COLUMNS": "120", "ONNXROOF_TARGETS": str(clean / "none")}
        reference = subprocess.run([str(Path(sys.executable).parent / "onnxroof"), *args], cwd=clean, env=env,
                                   capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
        same = reference.stdout.decode("utf-8", "replace") == texts[0]
        for out in clean.glob("out.*"):
            same = same and out.read_bytes() == (directory / out.name).read_bytes()
        return [] if same else ["target file used without naming it"]
    return check


def lists_bundled(record: dict, directory: Path) -> list[str]:
    """`onnxroof targets` with one bad file in ./hardware still lists the others."""
    stdout = (directory / ".stdout").read_text("utf-8", "replace")
    return [] if "h100" in stdout and record["code"] in (0, 2) else ["targets not listed"]


def untouched_victim(record: dict, directory: Path) -> list[str]:
    problems = []
    if (directory / "victim.txt").read_text() != SENTINEL:
        problems.append("symlink followed: victim.txt overwritten")
    out = directory / "out.txt"
    if out.is_symlink():
        problems.append("symlink followed: out.txt became a symlink")
    elif record["code"] in (0, 1) and (not out.is_file() or out.read_text() == SENTINEL or
                                        len(out.read_text().splitlines()) != 1):
        problems.append("half-written out.txt")
    return problems


def one_run_whole(models_each: int):
    """Two concurrent `check -o out.txt`, on folders a/ and b/: out.txt holds one run's lines, all of them."""
    def check(record: dict, directory: Path) -> list[str]:
        out = directory / "out.txt"
        lines = out.read_text().splitlines() if out.is_file() else []
        folders = {("/a/" in line, "/b/" in line) for line in lines}
        problems = []
        if len(folders) != 1 or len(lines) != models_each:
            problems.append(f"mixed or half-written out.txt ({len(lines)} lines from {len(folders)} runs)")
        if any(code not in (0, 1, 2) for code in record.get("other_codes", [])):
            problems.append(f"exit {record['other_codes']} (the run alongside)")
        return problems
    return check


def stopped_by(signum: int, delay: float, within: float = 5.0):
    """A run sent ``signum`` after ``delay`` s ends within ``within`` s of it with 128 + signum."""
    def check(record: dict, directory: Path) -> list[str]:
        code = record["code"]
        if record["seconds"] < delay:  # nothing to interrupt (a refusal, say): the budget checks judge it
            return [] if code in (0, 2) else ["finished before the signal"]
        problems = []
        if code not in (128 + signum, -signum):
            problems.append(f"signal: exit {code} on {signal.Signals(signum).name} (expected {128 + signum})")
        if record["seconds"] - delay > within:
            problems.append(f"signal ignored: stopped {record['seconds'] - delay:.1f} s after it")
        return problems
    return check


def comment_rows(names: list[str]):
    """The Action's comment has a row for each changed model, no more."""
    def check(record: dict, directory: Path) -> list[str]:
        comment = directory / "out" / "comment.md"
        if not comment.is_file():
            return ["rows: no comment.md"]
        rows = [line for line in comment.read_text().splitlines() if line.startswith("| <code>")]
        return [] if len(rows) == len(names) else [f"rows: {len(rows)} rows for {len(names)} changed models"]
    return check


def blames_plugin(record: dict, directory: Path) -> list[str]:
    said = (directory / ".stderr").read_text("utf-8", "replace") + (directory / ".stdout").read_text("utf-8", "replace")
    if record["code"] == 2 and not ("p.py" in said and "relu_rule" in said):
        return ["plugin not blamed (file and rule)"]
    return []


def refused_quickly(limit: float = 8.0):
    """calibrate refuses a bad --name before measuring (which takes --seconds), and writes nothing outside."""
    def check(record: dict, directory: Path) -> list[str]:
        problems = []
        stderr = (directory / ".stderr").read_text("utf-8", "replace")
        if record["code"] == 0:
            problems.append("budget: calibrate accepted the name")
        elif record["code"] == 2 and "name" not in stderr.lower():
            problems.append("refused for another reason than the name")
        if record["seconds"] > limit:
            problems.append(f"measured before refusing ({record['seconds']} s)")
        outside = [p for p in directory.rglob("*.toml") if "user-targets" not in p.parts]
        if outside:
            problems.append(f"outside the targets folder: {outside[0].relative_to(directory)}")
        return problems
    return check


def devices_message(record: dict, directory: Path) -> list[str]:
    stderr = (directory / ".stderr").read_text("utf-8", "replace")
    return ["devices message about ONNX dims"] if "ONNX" in stderr or " dim" in stderr else []


def module_list_once(record: dict, directory: Path) -> list[str]:
    stderr = (directory / ".stderr").read_text("utf-8", "replace")
    listed = stderr.split("modules with a view:", 1)[-1].strip().split(", ") if "modules with a view" in stderr else []
    return ["duplicate modules listed"] if len(listed) != len(set(listed)) else []


def findings_ratio(timings: dict, key: str):
    """Stores this run's time under ``key``; with both in, findings on may cost 1.5x findings off."""
    def check(record: dict, directory: Path) -> list[str]:
        timings[key] = record["seconds"]
        on, off = timings.get("on"), timings.get("off")
        if on and off and off > 1 and on > 1.5 * off:
            return [f"findings cost {on / off:.1f}x the analysis without them"]
        return []
    return check


# ---------------------------------------------------------------------------------------------
# Families


def family_1() -> list[Case]:
    runs = [["summary", "{dir}/m.onnx", "-q"], ["check", "{dir}/m.onnx", "--fail-if", "params>1G"],
            ["report", "{dir}/m.onnx", "-o", "{dir}/out.html", "-q"],
            ["diff", "{dir}/m.onnx", "{dir}/m.onnx", "--format", "html", "-o", "{dir}/out.html", "-q"]]
    return [case("43.1", f"evalbomb-{name}", how, {"m.onnx": data}, [Run(r) for r in runs])
            for name, (how, data) in evaluator_bombs().items()]


def family_2() -> list[Case]:
    runs = [["summary", "{dir}/m.onnx", "-q"], ["summary", "{dir}/m.onnx", "--by", "module", "-q"],
            ["summary", "{dir}/m.onnx", "--by", "module", "--format", "json", "-q"],
            ["report", "{dir}/m.onnx", "-o", "{dir}/out.html", "-q"], ["graph", "{dir}/m.onnx", "-o", "{dir}/out.svg", "-q"],
            ["diff", "{dir}/m.onnx", "{dir}/m.onnx", "--format", "html", "-o", "{dir}/out.html", "-q"]]
    cases = [case("43.2", f"deep-path-{depth}", f"4 Relus named /m0/m1/... {depth:,} levels deep",
                  {"m.onnx": deep_paths(depth)}, [Run(r) for r in runs]) for depth in (250, 1000, 100_000)]
    cases.append(case("43.2", "deep-path-staircase-1000", "1,000 Relus, node i named /s/s/.../relu (i levels)",
                      {"m.onnx": staircase(1000)}, [Run(r) for r in runs]))
    return cases


def family_3() -> list[Case]:
    runs = [["report", "{dir}/m.onnx", "--target", "l4", "-o", "{dir}/out.html", "-q"],
            ["diff", "{dir}/m.onnx", "{dir}/m.onnx", "--target", "l4", "--format", "html", "-o", "{dir}/out.html", "-q"]]
    cases = [case("43.3", "nested-fn-65536", "17 local functions, each calling the previous twice: 65,536 Relus",
                  {"m.onnx": nested_functions(17)}, [Run(r) for r in runs])]
    for length in (30_000, 100_000):
        cases.append(case("43.3", f"chain-{length}", f"{length:,} Relus in a chain", {"m.onnx": relu_chain(length)},
                          [Run(r) for r in runs]))
    return cases


def family_4() -> list[Case]:
    cases = []
    for branches, join in ((10_000, "Sum"), (20_000, "Sum"), (10_000, "Max"), (10_000, "Concat")):
        runs = [Run(["summary", "{dir}/m.onnx", "--target", "l4", "--no-findings", "-q"])]
        if branches == 10_000 and join == "Sum":
            runs.append(Run(["report", "{dir}/m.onnx", "--target", "l4", "-o", "{dir}/out.html", "-q"]))
        cases.append(case("43.4", f"fan-in-{join.lower()}-{branches}", f"one {join} of {branches:,} Relu branches of x",
                          {"m.onnx": fan_in(branches, join)}, runs))
    return cases


def family_5() -> list[Case]:
    model = {"m.onnx": relu_chain(2)}
    cases = [
        case("43.5", "hardware-dev-zero", "./hardware/zero.toml a symlink to /dev/zero", model,
             [Run(["targets"]), Run(["summary", "{dir}/m.onnx", "--target", "zero", "-q"]),
              Run(["summary", "{dir}/m.onnx", "--target", "l4", "-q"])],
             setup=lambda d: os.symlink("/dev/zero", d / "hardware" / "zero.toml")),
        case("43.5", "hardware-fifo", "./hardware/fifo.toml and ./hardware/l4.toml FIFOs", model,
             [Run(["targets"]), Run(["summary", "{dir}/m.onnx", "--target", "fifo", "-q"]),
              Run(["summary", "{dir}/m.onnx", "--target", "l4", "-q"])],
             setup=lambda d: (os.mkfifo(d / "hardware" / "fifo.toml"), os.mkfifo(d / "hardware" / "l4.toml"))),
        case("43.5", "hardware-broken", "./hardware/broken.toml not TOML", {**model, "hardware/broken.toml": b"[[[\x00"},
             [Run(["targets"], check=lists_bundled), Run(["summary", "{dir}/m.onnx", "--target", "l4", "-q"])]),
        case("43.5", "hardware-huge", "./hardware/huge.toml of 64 MB", model,
             [Run(["targets"], check=lists_bundled)],
             setup=lambda d: (d / "hardware" / "huge.toml").write_bytes(b"# " + b"x" * (64 << 20) + b"\n")),
        case("43.5", "hardware-shadow-l4", "./hardware/l4.toml: the bundled l4 with a 1 ps launch cost",
             {**model, "hardware/l4.toml": shadow_l4()},
             shadow_runs("{dir}/hardware/l4.toml", "hardware/l4.toml")),
        case("43.5", "user-targets-shadow-l4", "$ONNXROOF_TARGETS/l4.toml: the bundled l4 with a 1 ps launch cost",
             {**model, "user-targets/l4.toml": shadow_l4()}, shadow_runs("{dir}/user-targets/l4.toml", "user-targets/l4.toml")),
    ]
    for item in cases[:4]:
        if item.setup is not None and "hardware/" not in "".join(item.files):
            item.setup = _in_hardware(item.setup)
    cases.append(case("43.5", "hardware-shadow-action", "a PR adds hardware/l4.toml (1 ps launch) and a model; "
                      "budget latency[l4]>1us, which the bundled l4 breaks", {},
                      [Run([], script="examples/onnxroof-diff.sh", cwd="{dir}/repo", codes=(1,), seconds=20, limit=60,
                           env={"BASE_REF": "HEAD~1", "OUT": "{dir}/out", "TARGETS": "l4", "BUDGETS": "latency[l4]>1us"})],
                      setup=lambda d: git_repo(d / "repo", {"README": b"base\n"},
                                               {"m.onnx": relu_chain(2), "hardware/l4.toml": shadow_l4()})))
    return cases


def shadow_runs(*needles: str) -> list[Run]:
    """Commands on a target named l4 that is not the bundled one: each output names its file."""
    commands = [["summary", "{dir}/m.onnx", "--target", "l4", "-q"],
                ["summary", "{dir}/m.onnx", "--target", "l4", "--format", "json", "-q"],
                ["report", "{dir}/m.onnx", "--target", "l4", "-o", "{dir}/out.html", "-q"],
                ["check", "{dir}/m.onnx", "--target", "l4", "--fail-if", "params>1G"],
                ["diff", "{dir}/m.onnx", "{dir}/m.onnx", "--target", "l4", "--format", "markdown", "-q"]]
    return [Run(argv, check=names_file(argv, *needles)) for argv in commands]


def _in_hardware(setup):
    def wrapped(directory: Path) -> None:
        (directory / "hardware").mkdir(exist_ok=True)
        setup(directory)
    return wrapped


def git_repo(path: Path, base: dict, head: dict) -> None:
    """A repository with a base commit holding ``base`` and a head commit adding ``head``."""
    names = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env = {**os.environ, **names}

    def git(*args):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, env=env)

    for i, files in enumerate((base, head)):
        for name, data in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
        if i == 0:
            git("init", "-q")
        git("add", "-A")
        git("commit", "-q", "-m", f"commit {i}")


def family_6() -> list[Case]:
    models = {f"{side}/m{i}.onnx": relu_chain(2 + i) for side in "ab" for i in range(12)}

    def plant(directory: Path) -> None:
        (directory / "victim.txt").write_text(SENTINEL)
        os.symlink(directory / "victim.txt", directory / "out.txt.partial")

    return [
        case("43.6", "check-o-planted-symlink", "check -o out.txt with out.txt.partial a symlink to victim.txt",
             {"m.onnx": relu_chain(2)}, [Run(["check", "{dir}/m.onnx", "--fail-if", "params>1G", "-o", "{dir}/out.txt"],
                                             check=untouched_victim)], setup=plant),
        case("43.6", "check-o-concurrent", "two check -o out.txt at once, on a/ and b/ (12 models each)", models,
             [Run(["check", "{dir}/a", "--fail-if", "params>1G", "-o", "{dir}/out.txt"],
                  alongside=["check", "{dir}/b", "--fail-if", "params>1G", "-o", "{dir}/out.txt"],
                  check=one_run_whole(12))]),
    ]


def family_7() -> list[Case]:
    texts = {"escape": ESCAPE, "nul": "a\x00b", "vt-ff": "a\x0bb\x0cc", "del-c1": "a\x7fb\x85c\x9bd",
             "bel-bs": "\x07\x08name", "line-sep": "a\u2028b\u2029c", "cr": "a\rb", "many": "".join(map(chr, range(1, 32)))}
    cases = []
    for label, text in texts.items():
        runs = [Run(["graph", "{dir}/m.onnx", "-o", "{dir}/out.svg", "-q"]), Run(["graph", "{dir}/m.onnx", "-o", "-", "-q"]),
                Run(["graph", "{dir}/m.onnx", "--target", "l4", "-o", "{dir}/out.svg", "-q"]),
                Run(["summary", "{dir}/m.onnx", "--by", "module", "-q"]),
                Run(["report", "{dir}/m.onnx", "--target", "l4", "-o", "{dir}/out.html", "-q"])]
        cases.append(case("43.7", f"control-names-{label}", f"node, module, tensor, dim and graph names holding {text!r}",
                          {"m.onnx": named(text)}, runs))
    return cases


def family_8() -> list[Case]:
    profile = ["profile", "{dir}/m.onnx", "--target", "l4", "--runs", "1", "--warmup", "0", "-q"]
    big = model_bytes([n("Relu", ["x"], ["y"], name="relu")], [("x", F32, [2**20, 2**20])], [("y", F32, [2**20, 2**20])])
    open_dims = model_bytes([n("Relu", ["x"], ["y"], name="relu")], [("x", F32, ["n", "n"])], [("y", F32, ["n", "n"])])
    loop = {"m.onnx": loop_model(10**15)}
    return [
        case("43.8", "profile-input-2^20x2^20", "Relu on a declared [2^20, 2^20] float input", {"m.onnx": big},
             [Run(profile)]),
        case("43.8", "profile-dim-2^20", "Relu on x[n, n], profiled with --dim n=1048576", {"m.onnx": open_dims},
             [Run([*profile, "--dim", "n=1048576"])]),
        case("43.8", "profile-loop-1e15", "a Loop of 10^15 trips (Relu body)", loop,
             [Run(profile), Run([*profile, "--timeout", "3"])]),
        case("43.8", "profile-runs-sigint", "a [256,256] MatMul profiled 10^6 times, Ctrl-C (SIGINT to the group) after 8 s",
             {"m.onnx": model_bytes([n("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F32, [256, 256])],
                                    [("y", F32, [256, 256])], [("w", np.eye(256, dtype=np.float32))])},
             [Run(["profile", "{dir}/m.onnx", "--target", "l4", "--runs", "1000000", "--warmup", "0", "-q"], signal=(signal.SIGINT, 8), check=stopped_by(signal.SIGINT, 8))]),
        case("43.8", "profile-loop-sigint", "a Loop of 10^15 trips, Ctrl-C (SIGINT to the group) after 8 s", loop,
             [Run(profile, signal=(signal.SIGINT, 8), check=stopped_by(signal.SIGINT, 8))]),
    ]


def family_9() -> list[Case]:
    changed = ["a b.onnx", "star*.onnx", "*.onnx", "dir with space/c d.onnx", "[ab].onnx"]
    base = {"README": b"base\n", "a.onnx": relu_chain(2), "b.onnx": relu_chain(2)}
    head = {name: relu_chain(2 + i) for i, name in enumerate(changed)}
    return [case("43.9", "action-odd-names", f"the Action's script on {len(changed)} changed models named "
                 f"{', '.join(map(repr, changed))}", {},
                 [Run([], script="examples/onnxroof-diff.sh", cwd="{dir}/repo", codes=(0,), seconds=60, limit=240,
                      env={"BASE_REF": "HEAD~1", "OUT": "{dir}/out", "OPTIONS": "--no-findings"},
                      check=comment_rows(changed))],
                 setup=lambda d: git_repo(d / "repo", base, head))]


PLUGIN = "from onnxroof import register\nfrom onnxroof.ops import OpCost\n\n"
PLUGIN_RULES = {
    "value-error": "def relu_rule(node):\n    raise ValueError('boom')\n",
    "second-node": "seen = []\n\ndef relu_rule(node):\n    seen.append(node)\n    if len(seen) > 1:\n"
                   "        raise RuntimeError('the second node')\n    return OpCost(flops=1)\n",
    "recursion": "def relu_rule(node):\n    return relu_rule(node)\n",
    "memory-error": "def relu_rule(node):\n    raise MemoryError\n",
    "type-error": "def relu_rule(node):\n    return OpCost(flops=1) + 1\n",
    "attribute-error": "def relu_rule(node):\n    return node.no_such_attribute\n",
}


def family_10() -> list[Case]:
    cases = []
    for label, body in PLUGIN_RULES.items():
        source = PLUGIN + body + "\nregister('Relu', relu_rule, family='elementwise')\n"
        plugin = ["--plugin", "{dir}/p.py"]
        runs = [Run(["summary", "{dir}/m.onnx", *plugin, "-q"], check=blames_plugin),
                Run(["summary", "{dir}/m.onnx", *plugin, "--target", "l4", "-q"], check=blames_plugin),
                Run(["report", "{dir}/m.onnx", *plugin, "--target", "l4", "-o", "{dir}/out.html", "-q"], check=blames_plugin),
                Run(["graph", "{dir}/m.onnx", *plugin, "-o", "{dir}/out.svg", "-q"], check=blames_plugin),
                Run(["check", "{dir}/m.onnx", *plugin, "--fail-if", "params>1G", "--jobs", "2"], check=blames_plugin),
                Run(["diff", "{dir}/m.onnx", "{dir}/m.onnx", *plugin, "--format", "json", "-q"], check=blames_plugin)]
        cases.append(case("43.10", f"plugin-rule-{label}", f"a plugin whose Relu rule: {body.strip()[:80]!r}",
                          {"m.onnx": relu_chain(3), "p.py": source.encode()}, runs))
    return cases


def family_11() -> list[Case]:
    names = {"300-chars": "n" * 300, "dotdot-x": "../../x", "slash": "a/b", "empty": "", "dotdot": "..",
             "absolute": "{dir}/abs-x", "escape": ESCAPE}
    cases = []
    for label, name in names.items():
        base = ["calibrate", "--name", name, "--threads", "1", "--seconds", "2", "-q"]
        runs = [Run([*base, "--save"], check=refused_quickly(), env={"ONNXROOF_TARGETS": "{dir}/a/b/user-targets"})]
        if label in ("300-chars", "escape"):
            runs.append(Run(base, check=refused_quickly()))
        cases.append(case("43.11", f"calibrate-name-{label}", f"calibrate --name {name[:40]!r} (--save)", {}, runs))
    return cases


def family_12() -> list[Case]:
    model = {"m.onnx": alike_blocks(4)}
    cases = [case("43.12", f"devices-{label}", f"--devices {value}", model,
                  [Run(["summary", "{dir}/m.onnx", "--target", "l4", "--devices", value, "-q"], check=devices_message)])
             for label, value in (("2^63", str(2**63)), ("2^64", str(2**64)), ("1e30", str(10**30)), ("2^62", str(2**62)))]
    cases.append(case("43.12", "graph-module-list", "graph --module nosuch on 4 alike /layer.K blocks", model,
                      [Run(["graph", "{dir}/m.onnx", "--module", "nosuch", "-o", "{dir}/out.svg", "-q"],
                           check=module_list_once)]))
    long_run = ["calibrate", "--threads", "1", "--seconds", "30", "-q", "-o", "{dir}/user-targets/t.toml"]
    cases.append(case("43.12", "sigterm-calibrate", "calibrate (30 s), SIGTERM after 3 s", {},
                      [Run(long_run, signal=(signal.SIGTERM, 3), check=stopped_by(signal.SIGTERM, 3), megabytes=2048)]))
    chains = {f"models/c{i}.onnx": relu_chain(30_000) for i in range(12)}
    cases.append(case("43.12", "sigterm-check", "check on 12 chains of 30,000 Relus (--target l4), SIGTERM after 3 s",
                      chains, [Run(["check", "{dir}/models", "--target", "l4", "--fail-if", "params>1G"],
                                   signal=(signal.SIGTERM, 3), check=stopped_by(signal.SIGTERM, 3))]))
    return cases


def family_13() -> list[Case]:
    cases = []
    for label, data in (("chain-30000", lambda: relu_chain(30_000)), ("chain-100000", lambda: relu_chain(100_000)),
                        ("fan-in-10000", lambda: fan_in(10_000)), ("fan-in-20000", lambda: fan_in(20_000)),
                        ("nested-fn-65536", lambda: nested_functions(17))):
        timings: dict = {}
        runs = [Run(["summary", "{dir}/m.onnx", "--target", "l4", "--no-findings", "-q"], check=findings_ratio(timings, "off")),
                Run(["summary", "{dir}/m.onnx", "--target", "l4", "-q"], check=findings_ratio(timings, "on"))]
        cases.append(case("43.13", f"findings-{label}", f"the default command with --target l4 (findings on, then off) "
                          f"on {label}", {"m.onnx": data()}, runs))
    return cases


def cases() -> list[Case]:
    import adversarial_round2_variants  # the variants past the issue's own reproducers (imports this module)

    return (family_1() + family_2() + family_3() + family_4() + family_5() + family_6() + family_7() + family_8()
            + family_9() + family_10() + family_11() + family_12() + family_13() + adversarial_round2_variants.cases())
