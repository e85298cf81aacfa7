"""Rerun the mutation testing of one module (docs/testing.md, "Mutation testing").

    python benchmarks/mutation.py onnxroof/roofline/placement.py [--only FUNCTION ...] [--baseline] [--rerun FILE]
                                                       [--survivors FILE] [--keep-config]

Run it from the top of the checkout with a Python in which onnxroof is NOT installed (neither
editable nor from a wheel) but its dependencies and mutmut 3.8 are: mutmut copies the package
into mutants/ and mutates the copy there, and an installed onnxroof would shadow that copy, so
every mutant would "survive". One way:

    python3 -m venv /tmp/mut && /tmp/mut/bin/pip install mutmut==3.8.1 && /tmp/mut/bin/pip install ".[test,profile]"
    /tmp/mut/bin/pip uninstall -y onnxroof
    /tmp/mut/bin/python benchmarks/mutation.py onnxroof/memory/problem.py

The script refuses to start if that Python can import onnxroof from outside the checkout.

What it does: writes the module and its focused test files (MODULES below: the tests that
exercise the module; a full-suite run per mutant is far too slow) into ``[tool.mutmut]`` of
pyproject.toml, clears mutants/, runs ``mutmut run --max-children 1`` (one worker: the machines
have two cores), prints the counts of ``mutmut results --all true`` and, with ``--survivors``,
writes every surviving mutant's diff to a file. Then it puts pyproject.toml back as it was
(``--keep-config`` leaves the selection in place, so that ``mutmut show NAME`` and ``mutmut
browse`` still work on this run's results).

A first score is ``--baseline`` (without the test files written for survivors); a second one,
once tests are added, is ``--rerun FILE`` with the first run's ``--survivors FILE``: only those
mutants run again, the first run's kills stand. memory.py's full run takes about 90 minutes
on two cores; ``--only`` narrows it to some functions.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files run against each of its mutants (mutmut runs, per mutant, only the
# tests among these that executed the mutated function). A file listed here that does not
# exist is left out with a note.
# (the ONNX node test cases take a minute: left out of the op rules' runs)
_OPS_TESTS = ["tests/ops/test_rules.py", "tests/ops/test_families.py", "tests/ops/test_normalization.py",
              "tests/ops/test_coverage.py", "--deselect=tests/ops/test_coverage.py::test_every_rule_runs_on_onnx_node_test_cases",
              "tests/ops/test_contrib_shapes.py", "tests/ops/test_quantized.py", "tests/cost/test_cost_model.py",
              "tests/ops/test_formulas.py"]
MODULES: dict[str, list[str]] = {
    "onnxroof/roofline/placement.py": ["tests/roofline/test_placement.py", "tests/memory/test_spill.py", "tests/roofline/test_targets.py",
                             "tests/compare/test_sweep.py", "tests/roofline/test_decisions.py"],
    # test_greedy_matches_its_definition takes 6 s under mutmut's trampolines, and every surviving
    # mutant of build_problem would run it: left out (greedy_order is still checked by the others)
    **dict.fromkeys(["onnxroof/memory/problem.py", "onnxroof/memory/schedule.py", "onnxroof/memory/spill.py",
                     "onnxroof/memory/liveness.py"],
                    ["tests/memory/test_liveness.py", "tests/memory/test_schedule.py",
                     "--deselect=tests/memory/test_schedule.py::test_greedy_matches_its_definition",
                     "tests/memory/test_spill.py", "tests/memory/test_problem.py", "tests/ops/test_control_flow.py",
                     "tests/memory/test_policies.py"]),
    "onnxroof/cli/app.py": ["tests/cli/test_outputs.py", "tests/cli/test_flags.py", "tests/cli/test_paths.py", "tests/compare/test_budgets.py",
                        "tests/ops/test_plugins.py",
                        "--deselect=tests/ops/test_plugins.py::test_docs_ops_md_is_generated_from_the_registry"],
    "onnxroof/compare/budgets.py": ["tests/compare/test_diff.py", "tests/cli/test_flags.py", "tests/compare/test_budgets.py"],
    "onnxroof/ops/matmul.py": _OPS_TESTS,
    "onnxroof/ops/conv.py": _OPS_TESTS,
    "onnxroof/ops/elementwise.py": _OPS_TESTS,
    "onnxroof/ops/normalization.py": _OPS_TESTS,
    "onnxroof/ops/__init__.py": _OPS_TESTS,
    "onnxroof/ops/pooling.py": _OPS_TESTS,
    "onnxroof/ops/reduction.py": _OPS_TESTS,
}

# written for the survivors of the first runs (issue 18): --baseline runs without them
NEW_TESTS = {"tests/roofline/test_decisions.py", "tests/memory/test_policies.py", "tests/cli/test_paths.py",
             "tests/ops/test_formulas.py", "tests/compare/test_budgets.py"}


SHOW_DIFFS = 150


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def select(text: str, module: str, tests: list[str]) -> str:
    """pyproject.toml's text with [tool.mutmut] set to mutate ``module`` against ``tests``."""
    head, marker, section = text.partition("[tool.mutmut]")
    if not marker:
        raise SystemExit("pyproject.toml has no [tool.mutmut] section")
    body, nxt, rest = section.partition("\n[")
    lines = [line for line in body.splitlines()
             if not re.match(r"\s*(paths_to_mutate|source_paths|pytest_add_cli_args_test_selection)\s*=", line)]
    lines[1:1] = [f"source_paths = {_toml_list([module])}",
                  f"pytest_add_cli_args_test_selection = {_toml_list(tests)}"]
    return head + marker + "\n".join(lines) + ("\n" if not nxt else "") + nxt + rest


def _check_python() -> None:
    with tempfile.TemporaryDirectory() as empty:
        found = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('onnxroof') is not None)"],
                               cwd=empty, capture_output=True, text=True).stdout.strip()
    if found == "True":
        raise SystemExit(f"{sys.executable} imports an installed onnxroof, which would shadow mutmut's mutated copy: "
                         "run this with a Python where onnxroof is not installed (see this file's docstring)")
    if importlib.util.find_spec("mutmut") is None:
        raise SystemExit(f"mutmut is not installed in {sys.executable}: pip install mutmut==3.8.1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", choices=sorted(MODULES), help="the module to mutate")
    parser.add_argument("--survivors", metavar="FILE", help="write every surviving mutant's diff to FILE")
    parser.add_argument("--only", action="append", default=[], metavar="FUNCTION",
                        help="mutate only this function (or method, Class.method) of the module; repeatable")
    parser.add_argument("--rerun", metavar="FILE",
                        help="run only the mutants listed in FILE (a --survivors file of an earlier run): after "
                             "adding tests, the earlier run's kills stand, so this gives the new score quickly")
    parser.add_argument("--baseline", action="store_true",
                        help="leave out the test files written for mutmut's survivors (NEW_TESTS): the first run's score")
    parser.add_argument("--keep-config", action="store_true",
                        help="leave [tool.mutmut] selecting this module afterwards (for mutmut show / browse)")
    args = parser.parse_args(argv)
    _check_python()
    # test files, and pytest options (--deselect=...) kept as they are
    tests = [t for t in MODULES[args.module] if t.startswith("-") or (ROOT / t).exists()]
    for missing in sorted(set(MODULES[args.module]) - set(tests)):
        print(f"note: {missing} does not exist; left out", file=sys.stderr)
    if args.baseline:
        tests = [t for t in tests if t not in NEW_TESTS]
    script = Path(sys.executable).parent / "mutmut"
    mutmut = [str(script)] if script.exists() else [sys.executable, "-c", "import sys; from mutmut.__main__ import cli; sys.exit(cli())"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still puts pyproject.toml back
    pyproject = ROOT / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(select(original, args.module, tests), encoding="utf-8")
    try:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)  # results of another module's run
        print(f"mutating {args.module} against {' '.join(tests)}", flush=True)
        dotted = args.module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        names = [f"{dotted}.x{'ǁ'.join(['', *f.split('.')]) if '.' in f else '_' + f}__mutmut_*" for f in args.only]
        if args.rerun:
            names += re.findall(r"^# (\S+): survived$", Path(args.rerun).read_text(encoding="utf-8"), re.MULTILINE)
        run = subprocess.run([*mutmut, "run", "--max-children", "1", *names], cwd=ROOT)
        if run.returncode:
            print(f"mutmut run exited {run.returncode}", file=sys.stderr)
            return run.returncode
        listing = subprocess.run([*mutmut, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout
        statuses = collections.Counter()
        survivors = []
        for line in listing.splitlines():
            name, _, status = line.strip().rpartition(": ")
            if name:
                statuses[status] += 1
                if status == "survived":
                    survivors.append(name)
        statuses.pop("not checked", None)  # outside --only
        total = sum(statuses.values())
        killed = statuses["killed"]
        print(f"{args.module}: {total} mutants, {killed} killed ({100 * killed / max(total, 1):.0f}%), "
              f"{statuses['survived']} survived, {statuses['timeout']} timeout, {statuses['no tests']} no tests"
              + "".join(f", {count} {status}" for status, count in sorted(statuses.items())
                        if status not in ("killed", "survived", "timeout", "no tests")))
        if args.survivors:
            # one `mutmut show` takes a second or two: diffs for the first SHOW_DIFFS survivors only
            with open(args.survivors, "w", encoding="utf-8") as out:
                out.writelines(f"# {name}: survived\n" for name in survivors[SHOW_DIFFS:])
                for name in survivors[:SHOW_DIFFS]:
                    shown = subprocess.run([*mutmut, "show", name], cwd=ROOT, capture_output=True, text=True).stdout
                    out.write(shown + "\n")
            print(f"{len(survivors)} survivors written to {args.survivors} "
                  f"(with their diffs: {min(len(survivors), SHOW_DIFFS)})")
        return 0
    finally:
        if not args.keep_config:
            pyproject.write_text(original, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
