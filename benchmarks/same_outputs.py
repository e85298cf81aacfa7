"""Record every output of onnxroof on a set of models, and compare two recordings.

A refactor must change no output. This runs the built-in examples, the models that
tests/models.py builds and every model of the validation corpora found (/work/corpus/*/*.onnx with
its manifest, or --corpus DIR) through `summary --format json`, `summary` (the table), `report`,
`summary --symbolic`, `diff` (json, markdown, html) and `explain`, with several targets, and writes
each output to a file of DIR. The version stamp and the time of day are masked.

    python benchmarks/same_outputs.py record DIR [--tree SRC] [--corpus DIR]... [--jobs N]
    python benchmarks/same_outputs.py compare BEFORE AFTER [--only REGEX]

--only REGEX (both commands) keeps the outputs whose file name matches: a quick check of a part
(`--only 'example_|report'`) before the whole recording.

--tree runs the onnxroof of another source tree (a `git worktree` of the base commit), so the
before and the after can be recorded from one checkout. `compare` exits 1 when any file differs
or is missing, and names each.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ["h100-sxm", "jetson-orin-nano", "raspberry-pi-5", "coral-edge-tpu"]
TIMEOUT_SECONDS = 300  # a run past this is recorded as timed out (the same in both recordings, or a change)
EXAMPLES = ["shallownet", "shallownet-separable", "minigooglenet", "minigooglenet-separable"]
# Masks for what may differ between two runs of the same code.
MASKS = [
    (re.compile(r"onnxroof \d+\.\d+\.\d+[\w.+-]*"), "onnxroof VERSION"),
    (re.compile(r'"version": "[^"]*"'), '"version": "VERSION"'),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), "DATETIME"),
    (re.compile(r"(in|took) \d+(\.\d+)? ?(s|ms)\b"), r"\1 TIME"),
    (re.compile(r"/tmp/same-outputs-\w+"), "SCRATCH"),  # the models' temporary folder
]


def test_models(out: Path) -> list[tuple[str, list[str], str]]:
    """The models tests/models.py builds, written to OUT, each with the flags that bind it."""
    sys.path.insert(0, str(REPO / "tests"))
    import onnx
    import models  # tests/models.py

    built = {
        "chain": (models.chain_model(), []),
        "interleaved": (models.interleaved_branches_model(), []),
        "if": (models.if_model(), []),
        "loop-constant": (models.loop_model(True), []),
        "loop-trips": (models.loop_model(False), ["--loop-trips", "5"]),
        "look-alike": (models.look_alike_model(), []),
        "transformer-like": (models.transformer_like(layers=4), []),
        "transformer-block": (models.transformer_block(), []),
    }
    cases = []
    for name, (model, flags) in built.items():
        path = out / f"{name}.onnx"
        onnx.save(model, path)
        cases.append((str(path), flags, name))
    return cases


def corpus_models(corpora: list[str]) -> list[tuple[str, list[str], str]]:
    """Each corpus manifest's model (its "file") with the flags of its first binding ("bind")."""
    cases = []
    for corpus in corpora:
        for manifest in sorted(glob.glob(os.path.join(corpus, "*.json"))):
            try:
                data = json.loads(Path(manifest).read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or "file" not in data or not os.path.exists(data["file"]):
                continue
            bind = data.get("bind") or (data.get("bindings") or [{}])[0]
            flags = []
            for name, value in (bind.get("dims") or {}).items():
                flags += ["--dim", f"{name}={value}"]
            for name, shape in (bind.get("input_shapes") or {}).items():
                flags += ["--input-shape", f"{name}:{','.join(map(str, shape))}"]
            for name, value in (bind.get("values") or {}).items():
                values = value if isinstance(value, list) else [value]
                flags += ["--value", f"{name}={','.join(map(str, values))}"]
            cases.append((data["file"], flags, data.get("id") or Path(data["file"]).stem))
    return cases


def commands(model: str, flags: list[str], name: str, scratch: Path) -> dict[str, list[str]]:
    targets = [arg for t in TARGETS for arg in ("--target", t)]
    report = scratch / f"{name}.report.html"
    return {
        f"{name}.summary.json": ["summary", model, *flags, *targets, "--format", "json", "-q"],
        f"{name}.summary.txt": ["summary", model, *flags, "--target", TARGETS[0], "-q"],
        f"{name}.by-module.txt": ["summary", model, *flags, "--by", "module", "--target", TARGETS[1], "-q"],
        f"{name}.int8.csv": ["summary", model, *flags, "--dtype", "int8", "--format", "csv", "-q"],
        f"{name}.markdown.md": ["summary", model, *flags, "--target", TARGETS[2], "--format", "markdown", "-q"],
        f"{name}.symbolic.txt": ["summary", model, "--symbolic", "--target", TARGETS[0], "-q"],
        f"{name}.report.html": ["report", model, *flags, *targets, "-o", str(report), "-q"],
    }


def run(tree: str | None, argv: list[str], output_file: Path | None) -> str:
    """One command's exit code, stdout, stderr and output file, masked. The source tree runs from
    its own folder: `python -c` puts the working directory first on sys.path, before PYTHONPATH."""
    checkout = str(Path(tree).resolve()) if tree else str(REPO)
    env = dict(os.environ, PYTHONPATH=checkout + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-c", "import sys; from onnxroof.cli import main; sys.exit(main())", *argv],
                              capture_output=True, text=True, env=env, cwd=checkout, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return f"timed out after {TIMEOUT_SECONDS} s\n"
    text = f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    if output_file is not None and output_file.exists():
        text += "\n--- file\n" + output_file.read_text(errors="replace")
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text.replace(checkout, "CHECKOUT")  # bundled target files are read from the checkout


def model_pairs_and_commands(scratch: Path) -> list[tuple[str, list[str], Path | None]]:
    """diff and compare of the examples, explain of one node, and the commands that read no model."""
    work: list[tuple[str, list[str], Path | None]] = []
    for base, head in [("shallownet", "shallownet-separable"), ("minigooglenet", "minigooglenet-separable")]:
        name, models = f"{base}-vs-{head}", [f"example:{base}", f"example:{head}"]
        for fmt in ("json", "markdown", "table"):
            work.append((f"{name}.diff.{fmt}", ["diff", *models, "--target", TARGETS[0], "--target", TARGETS[3],
                                                 "--format", fmt, "-q"], None))
        html = scratch / f"{name}.diff.html"
        work.append((f"{name}.diff.html", ["diff", *models, "--target", TARGETS[0], "--format", "html", "-o", str(html), "-q"],
                     html))
    every_example = [f"example:{e}" for e in EXAMPLES]
    return work + [
        ("compare.json", ["compare", *every_example, "--target", TARGETS[1], "--format", "json", "--jobs", "1", "-q"], None),
        ("explain.txt", ["explain", "example:minigooglenet", "conv2d_3", "--target", TARGETS[0], "-q"], None),
        ("ops.md", ["ops"], None),
        ("targets.txt", ["targets"], None),
    ]


def record(out: Path, tree: str | None, corpora: list[str], jobs: int, built_in: bool = True, only: str = "") -> None:
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="same-outputs-"))
    cases = corpus_models(corpora)
    if built_in:
        cases = [(f"example:{e}", [], f"example:{e}") for e in EXAMPLES] + test_models(scratch) + cases
    work = []
    for model, flags, name in cases:
        name = re.sub(r"[^\w.-]+", "_", name)
        for file, argv in commands(model, flags, name, scratch).items():
            work.append((file, argv, scratch / f"{name}.report.html" if argv[0] == "report" else None))
    if built_in:
        work += model_pairs_and_commands(scratch)
    work = [item for item in work if re.search(only, item[0])]

    def one(item):
        file, argv, output_file = item
        (out / file).write_text(run(tree, argv, output_file))
        return file

    with ThreadPoolExecutor(jobs) as pool:
        for done, file in enumerate(pool.map(one, work), 1):
            print(f"[{done}/{len(work)}] {file}", file=sys.stderr)


def compare(before: Path, after: Path, only: str = "") -> int:
    names = sorted(name for name in {p.name for p in before.iterdir()} | {p.name for p in after.iterdir()}
                   if re.search(only, name))
    bad = 0
    for name in names:
        a, b = before / name, after / name
        if not a.exists() or not b.exists():
            print(f"missing in {'before' if not a.exists() else 'after'}: {name}")
            bad += 1
            continue
        if a.read_text() != b.read_text():
            bad += 1
            diff = list(difflib.unified_diff(a.read_text().splitlines(), b.read_text().splitlines(), lineterm="", n=1))
            print(f"differs: {name}")
            print("\n".join(line[:200] for line in diff[:20]))
    print(f"{len(names) - bad} of {len(names)} outputs identical")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--tree", help="the source tree whose onnxroof runs (default: the installed one)")
    rec.add_argument("--corpus", action="append", help="a corpus folder (default: /work/corpus/*)")
    rec.add_argument("--jobs", type=int, default=2)
    rec.add_argument("--corpus-only", action="store_true", help="leave out the examples and the test models")
    rec.add_argument("--only", default="", help="only the outputs whose file name matches this regex")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    cmp_.add_argument("--only", default="", help="only the outputs whose file name matches this regex")
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.before, args.after, args.only)
    corpora = args.corpus if args.corpus is not None else sorted(glob.glob("/work/corpus/*"))
    record(args.out, args.tree, corpora, args.jobs, built_in=not args.corpus_only, only=args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
