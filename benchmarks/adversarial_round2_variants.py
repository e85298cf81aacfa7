"""Variants of issue 43's families beyond its own reproducers (benchmarks/adversarial_round2.py),
found by a hostile run over the same surfaces: each a case the tally keeps, held to the same
budget. Built by code from the case's name alone, as every case is.
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
from adversarial_round2 import (
    PLUGIN,
    alike_blocks,
    blames_plugin,
    bomb_model,
    case,
    comment_rows,
    constant,
    devices_message,
    git_repo,
    n,
    relu_chain,
)
from adversarial_running import Run


def quiet_stderr(record: dict, directory: Path) -> list[str]:
    """A run that succeeds says nothing on stderr (no numpy warning from the evaluator's kernels)."""
    stderr = (directory / ".stderr").read_text("utf-8", "replace").strip()
    return [f"stderr noise on exit 0 ({stderr.splitlines()[0][:60]!r})"] if record["code"] == 0 and stderr else []


def family_1() -> list:
    """Shape arithmetic whose reference kernel warns: an integer Mod or Div by zero, a Cast of inf."""
    c = np.arange(16, dtype=np.int64)
    zero = constant("z", np.array(0, np.int64))
    models = {
        "mod-by-zero": (
            "int64 Mod of a Constant by 0",
            bomb_model([constant("c", c), zero, n("Mod", ["c", "z"], ["t"])], "t"),
        ),
        "div-by-zero": (
            "int64 Div of a Constant by 0",
            bomb_model([constant("c", c), zero, n("Div", ["c", "z"], ["t"])], "t"),
        ),
        "cast-inf": (
            "Cast of a float Constant of 1e30 to int64, the result a Reshape's shape",
            bomb_model([constant("f", np.full(2, 1e30, np.float32)), n("Cast", ["f"], ["t"], to=7)], "t"),
        ),
    }
    runs = [["summary", "{dir}/m.onnx", "-q"], ["report", "{dir}/m.onnx", "-o", "{dir}/out.html", "-q"]]
    return [
        case("43.1", f"evalwarn-{name}", how, {"m.onnx": data}, [Run(r, check=quiet_stderr) for r in runs])
        for name, (how, data) in models.items()
    ]


def family_6() -> list:
    """Output names at and past the 255 bytes a Linux file name holds: the longest is written (its
    temporary's name shortened), a longer one refused in one line, as is any path past the limit."""
    longest, over = "y" * 251 + ".txt", "x" * 300 + ".txt"
    model = {"m.onnx": relu_chain(2)}
    return [
        case(
            "43.6",
            "output-name-255",
            "-o and check -o to a file named with 255 bytes",
            model,
            [
                Run(["summary", "{dir}/m.onnx", "-q", "-o", "{dir}/" + longest], codes=(0,)),
                Run(["check", "{dir}/m.onnx", "--fail-if", "params>1G", "-o", "{dir}/c" + longest[1:]], codes=(0,)),
            ],
        ),
        case(
            "43.6",
            "output-name-300",
            "-o, check -o, --emit-order to a 300-byte file name",
            model,
            [
                Run(["summary", "{dir}/m.onnx", "-q", "-o", "{dir}/" + over]),
                Run(["check", "{dir}/m.onnx", "--fail-if", "params>1G", "-o", "{dir}/" + over]),
                Run(["summary", "{dir}/m.onnx", "-q", "--emit-order", "{dir}/" + over]),
            ],
        ),
        case(
            "43.6",
            "input-path-300",
            "a model, --target, --plugin and check's folder named with 300 bytes",
            model,
            [
                Run(["summary", "{dir}/" + over + ".onnx", "-q"]),
                Run(["summary", "{dir}/m.onnx", "--target", "t" * 300, "-q"]),
                Run(["summary", "{dir}/m.onnx", "--plugin", "{dir}/" + over + ".py", "-q"]),
                Run(["check", "{dir}/" + over, "--fail-if", "params>1G"]),
            ],
        ),
    ]


RULES = {
    "base-exception": "def relu_rule(node):\n    raise BaseException('base')\n",
    "generator-exit": "def relu_rule(node):\n    raise GeneratorExit\n",
    "unprintable": "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n"
    "def relu_rule(node):\n    raise Odd()\n",
}


def family_10() -> list:
    """Rules raising what is not an Exception (it ended the run in a traceback, exit 1), an exception
    that cannot say itself (exit 3), and a KeyboardInterrupt in check's workers, which ignore Ctrl-C."""
    cases = []
    plugin = ["--plugin", "{dir}/p.py"]
    for label, body in {**RULES, "keyboard-interrupt": "def relu_rule(node):\n    raise KeyboardInterrupt\n"}.items():
        source = PLUGIN + body + "\nregister('Relu', relu_rule, family='elementwise')\n"
        runs = [Run(["check", "{dir}/m.onnx", *plugin, "--fail-if", "params>1G", "--jobs", "2"], check=blames_plugin)]
        if label in RULES:
            runs += [
                Run(["summary", "{dir}/m.onnx", *plugin, "-q"], check=blames_plugin),
                Run(
                    ["report", "{dir}/m.onnx", *plugin, "--target", "l4", "-o", "{dir}/out.html", "-q"],
                    check=blames_plugin,
                ),
            ]
        cases.append(
            case(
                "43.10",
                f"plugin-rule-{label}",
                f"a plugin whose Relu rule: {body.strip()[:80]!r}",
                {"m.onnx": relu_chain(3), "p.py": source.encode()},
                runs,
            )
        )
    return cases


def refused_as_count(record: dict, directory: Path) -> list[str]:
    """A count of 5,000 digits or in another script's digits is refused in the flag's own words,
    in a line of sane length (not Python's "invalid ... value" with the whole value)."""
    stderr = (directory / ".stderr").read_text("utf-8", "replace")
    problems = [] if record["code"] == 2 else [f"count accepted (exit {record['code']})"]
    if "invalid" in stderr and "value:" in stderr:
        problems.append("argparse's own words, not the flag's")
    if len(stderr) > 400:
        problems.append(f"a {len(stderr):,}-character error line")
    return problems + devices_message(record, directory)


def family_12() -> list:
    values = {"5000-digits": "9" * 5000, "arabic-indic-3": "\u0663", "fullwidth-12": "\uff11\uff12"}
    return [
        case(
            "43.12",
            f"count-{label}",
            f"--devices and --batch {value[:12]!r}",
            {"m.onnx": alike_blocks(2)},
            [
                Run(["summary", "{dir}/m.onnx", "--target", "l4", f"--devices={value}", "-q"], check=refused_as_count),
                Run(["summary", "{dir}/m.onnx", f"--batch={value}", "-q"], check=refused_as_count),
            ],
        )
        for label, value in values.items()
    ]


def no_temporary_beside(record: dict, directory: Path) -> list[str]:
    """A run stopped by a signal leaves no temporary beside its -o file (``.out.json.XXXX.tmp``)."""
    left = sorted(p.name for p in directory.glob(".out.*"))
    return [f"left a temporary beside the output ({left[0]})"] if left else []


def sigterm_while_writing() -> list:
    """SIGTERM at several moments of a run whose output (a JSON of 100,000 nodes, 16 MB) takes a
    second to make and write: before the write the process ends as killed, during it the
    temporary file must go (it stayed: SIGTERM's default action ends the process at once)."""
    runs = [
        Run(
            ["summary", "{dir}/m.onnx", "--format", "json", "-o", "{dir}/out.json", "-q"],
            signal=(signal.SIGTERM, delay),
            check=no_temporary_beside,
        )
        for delay in (1.5, 2.0, 2.5, 3.0, 3.5, 4.5)
    ]
    return [
        case(
            "43.12",
            "sigterm-json-write",
            "summary --format json -o of 100,000 Relus, SIGTERM at 1.5 to 4.5 s",
            {"m.onnx": relu_chain(100_000)},
            runs,
        )
    ]


def wide_paths(siblings: int, levels: int) -> bytes:
    """Relu i named /root/m{i}/d/d/... (``levels`` d's)/relu: every node its own path, a module
    tree of siblings x (levels + 1) modules (20,000 x 33 past the depth fold: 660,000)."""
    return relu_chain(siblings, tuple(f"/root/m{i}/" + "d/" * levels + "relu" for i in range(siblings)))


def family_2() -> list:
    """Module trees wide rather than deep: 100,000 siblings (one level), and 20,000 distinct
    50-level paths (1.7 GB and killed in summary --by module --format json; 1 GB in report)."""
    runs = [
        ["summary", "{dir}/m.onnx", "--by", "module", "-q"],
        ["summary", "{dir}/m.onnx", "--by", "module", "--format", "json", "-q"],
        ["summary", "{dir}/m.onnx", "--target", "l4", "-q"],
        ["report", "{dir}/m.onnx", "-o", "{dir}/out.html", "-q"],
        ["graph", "{dir}/m.onnx", "-o", "{dir}/out.svg", "-q"],
        ["diff", "{dir}/m.onnx", "{dir}/m.onnx", "--format", "html", "-o", "{dir}/out.html", "-q"],
    ]
    return [
        case(
            "43.2",
            "wide-paths-100000x1",
            "100,000 Relus named /root/m{i}/relu: 100,000 sibling modules",
            {"m.onnx": wide_paths(100_000, 0)},
            [Run(r) for r in runs],
        ),
        case(
            "43.2",
            "wide-paths-20000x50",
            "20,000 Relus named /root/m{i}/d/d/.../relu, 50 d's: 660,000 modules",
            {"m.onnx": wide_paths(20_000, 50)},
            [Run(r) for r in runs],
        ),
    ]


def one_status(expected: str):
    """$GITHUB_OUTPUT holds one status line, the script's, and no line a model's name made."""

    def check(record: dict, directory: Path) -> list[str]:
        output = directory / "github-output"
        lines = output.read_text("utf-8", "replace").splitlines() if output.is_file() else []
        keys = [line.split("=", 1)[0] for line in lines]
        problems = []
        if keys.count("status") != 1 or f"status={expected}" not in lines:
            problems.append(
                f"injected: $GITHUB_OUTPUT status lines {[line for line in lines if line.startswith('status')]}"
            )
        if any(key not in ("status", "summary", "comment") for key in keys):
            problems.append("injected: a line of a model's name in $GITHUB_OUTPUT")
        return problems

    return check


def family_9() -> list:
    """Changed models whose names hold a newline: one that breaks a budget is named
    "b<LF>status=0<LF>z=.onnx", which the summary line wrote into $GITHUB_OUTPUT as lines of its
    own (the job's pass or fail is read from the status there); a tab, a leading dash and a quote too."""
    changed = ["b\nstatus=0\nz=.onnx", "-dash.onnx", "tab\there.onnx", "quote'\"q.onnx"]
    head = {name: relu_chain(4 + i) for i, name in enumerate(changed)}
    env = {
        "BASE_REF": "HEAD~1",
        "OUT": "{dir}/out",
        "OPTIONS": "--no-findings",
        "BUDGETS": "flops>1",
        "GITHUB_OUTPUT": "{dir}/github-output",
    }

    def rows_and_status(record: dict, directory: Path) -> list[str]:
        return comment_rows(changed)(record, directory) + one_status("1")(record, directory)

    return [
        case(
            "43.9",
            "action-newline-names",
            "the Action's script on changed models named "
            + ", ".join(map(repr, changed))
            + ", budget flops>1 broken by all",
            {},
            [
                Run(
                    [],
                    script="examples/onnxroof-diff.sh",
                    cwd="{dir}/repo",
                    codes=(1,),
                    seconds=60,
                    limit=240,
                    env=env,
                    check=rows_and_status,
                )
            ],
            setup=lambda d: git_repo(d / "repo", {"README": b"base\n"}, head),
        )
    ]


def doubling_loop(trips: int) -> bytes:
    """A Loop whose body concatenates its tensor with itself: 2^trips x 8 floats, allocated as it runs."""
    from adversarial import F32, I64, model_bytes
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [n("Identity", ["cond"], ["co"]), n("Concat", ["v", "v"], ["vo"], axis=0)],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", F32, ["d"]),
        ],
        [helper.make_tensor_value_info("co", TensorProto.BOOL, []), helper.make_tensor_value_info("vo", F32, ["e"])],
    )
    return model_bytes(
        [n("Loop", ["M", "", "x"], ["y"], name="loop", body=body)],
        [("x", F32, [8])],
        [("y", F32, ["f"])],
        [("M", np.array(trips, np.int64))],
    )


def family_8() -> list:
    profile = ["profile", "{dir}/m.onnx", "--target", "l4", "--runs", "1", "--warmup", "0", "-q"]
    return [
        case(
            "43.8",
            "profile-doubling-loop",
            "a Loop of 60 trips doubling its tensor (took the machine's 24 GB in onnxruntime's child)",
            {"m.onnx": doubling_loop(60)},
            [Run(profile)],
        )
    ]


def cases() -> list:
    return (
        family_1()
        + family_2()
        + family_6()
        + family_8()
        + family_9()
        + family_10()
        + family_12()
        + sigterm_while_writing()
    )
