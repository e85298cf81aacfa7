"""Running benchmarks/adversarial.py's cases and tallying them: each run a subprocess with a time
limit and a 2 GB address-space limit, its exit code, time, peak RSS (``wait4``'s ``ru_maxrss``),
and the problems seen in what it printed and wrote; issue 43's families also held to that issue's
budget (:func:`_budget_problems`). Then the tally (:func:`render`) and a line per failing run
(:func:`failure_lines`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
# the checkout whose onnxroof (and Action script) the runs use: this one, or --checkout DIR's
CHECKOUT = {"path": ROOT}
TIME_LIMIT = 60
MEMORY_LIMIT = 2 << 30
SENTINEL = "KNOWN CONTENT: must survive a failed run\n"


@dataclass
class Run:
    """One run of a round-2 case: the CLI's arguments, or a bash script of the repository."""
    argv: list  # onnxroof's arguments ("{dir}" replaced), or the script's
    script: str = ""  # a file under the repository run with bash instead of onnxroof
    env: dict = field(default_factory=dict)  # added to the environment ("{dir}" replaced)
    cwd: str = "{dir}"
    signal: tuple = ()  # (signal number, seconds after the start): sent to the process (SIGINT: its group)
    alongside: list = field(default_factory=list)  # another onnxroof argv started at the same moment
    check: Callable | None = None  # (record, directory) -> problems, after the run
    codes: tuple = (0, 2)  # the exit codes the issue allows (a budget run may add 1)
    seconds: float = 10  # the time budget (a script running onnxroof several times gets more)
    limit: float = 30  # stopped past this (a hang)
    megabytes: int = 500  # the peak RSS budget (calibrate's measuring arrays are larger by design)


def _limits() -> None:
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


ESCAPES = re.compile("[\x1b\x07\x9b]")
CSV_FORMULA = re.compile(r"^[=+@\t\r]|^-(?![\d.])")
TRACEBACK = "Traceback (most recent call last)"


def _command(run, directory: Path) -> tuple[list, str, Run | None]:
    """The argv to start, the command as the tally shows it, and the round-2 spec if any."""
    d = str(directory)
    if isinstance(run, Run):
        args = [a.replace("{dir}", d) for a in run.argv]
        if run.script:
            return ["bash", str(CHECKOUT["path"] / run.script), *args], f"bash {run.script} " + " ".join(args).replace(d, "DIR"), run
        return [str(Path(sys.executable).parent / "onnxroof"), *args], "onnxroof " + " ".join(args).replace(d, "DIR"), run
    if run[0] == "api":
        return [sys.executable, "-c", run[1].replace("{dir}", d)], "python -c <analyze call>", None
    args = [a.replace("{dir}", d) for a in run]
    return [str(Path(sys.executable).parent / "onnxroof"), *args], "onnxroof " + " ".join(args).replace(d, "DIR"), None


def _environment(directory: Path, spec: Run | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT["path"]), "COLUMNS": "120", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    if spec is not None:  # round 2: a private temporary folder (checked empty afterwards) and targets folder
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env["TMPDIR"] = str(directory / "tmp")
        env["ONNXROOF_TARGETS"] = str(directory / "user-targets")
        env.update({k: v.replace("{dir}", str(directory)) for k, v in spec.env.items()})
    return env


def _start(argv: list, directory: Path, env: dict, cwd: str, tag: str):
    out, err = open(directory / f".stdout{tag}", "wb"), open(directory / f".stderr{tag}", "wb")
    process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_limits, env=env,
                               cwd=cwd.replace("{dir}", str(directory)))
    out.close()
    err.close()
    return process


def _reap(process, limit: float) -> tuple[int, object, bool]:
    """Wait for ``process`` (killing its group past ``limit`` seconds): exit code, rusage, timed out."""
    timed_out = threading.Event()

    def kill():
        timed_out.set()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(limit, kill)
    timer.start()
    _pid, status, usage = os.wait4(process.pid, 0)
    timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage, timed_out.is_set()


def _send_later(process, signum: int, delay: float) -> threading.Timer:
    def send():
        try:  # Ctrl-C reaches the whole foreground group; kill(1) one process
            os.killpg(process.pid, signum) if signum == signal.SIGINT else os.kill(process.pid, signum)
        except ProcessLookupError:
            pass

    timer = threading.Timer(delay, send)
    timer.start()
    return timer


def run_one(argv_or_api, directory: Path, model_files: list[Path], budget: bool = False) -> dict:
    argv, shown, spec = _command(argv_or_api, directory)
    api = spec is None and argv_or_api[0] == "api"
    outputs = {}
    for a in argv:
        if a.startswith(str(directory)) and Path(a).suffix in OUTPUT_SUFFIXES and _plain_path(a):
            Path(a).write_text(SENTINEL)
            outputs[a] = True
    before = {p: p.read_bytes() for p in model_files}
    env = _environment(directory, spec)
    if spec is not None:
        shutil.rmtree(directory / "tmp", ignore_errors=True)
        (directory / "tmp").mkdir()
    start = time.monotonic()
    process = _start(argv, directory, env, spec.cwd if spec else "{dir}", "")
    others = [_start(_command(Run(a), directory)[0], directory, env, spec.cwd, str(i + 2))
              for i, a in enumerate([spec.alongside] if spec and spec.alongside else [])]
    sender = _send_later(process, *spec.signal) if spec and spec.signal else None
    limit = spec.limit if budget and spec is not None else TIME_LIMIT
    code, usage, timed_out = _reap(process, limit)
    seconds = time.monotonic() - start
    rss_kb = usage.ru_maxrss
    other_codes = []
    for other in others:
        other_code, other_usage, other_timed_out = _reap(other, limit)
        other_codes.append(other_code)
        rss_kb = max(rss_kb, other_usage.ru_maxrss)
        timed_out = timed_out or other_timed_out
    if sender is not None:
        sender.cancel()
    stdout = (directory / ".stdout").read_bytes().decode("utf-8", "replace")
    stderr = (directory / ".stderr").read_bytes().decode("utf-8", "replace")
    record = {"command": shown, "code": code, "seconds": round(seconds, 2), "rss_mb": rss_kb // 1024,
              "problems": [], "stderr": stderr.strip().splitlines()[-1][:300] if stderr.strip() else "",
              "stderr_first": stderr.strip().splitlines()[0][:300] if stderr.strip() else "",
              "stdout": stdout[:300]}
    if other_codes:
        record["other_codes"] = other_codes
    problems = record["problems"]
    if timed_out:
        problems.append("timeout")
    # (a MemoryError told in a one-line refusal, exit 2, is not the limit hit: a plugin's rule may raise one)
    said = "MemoryError" in stderr or "bad_alloc" in stderr or "allocate memory" in stderr.lower()
    memory = (said and code not in (0, 1, 2)) or code in (-signal.SIGSEGV, -signal.SIGABRT) or rss_kb * 1024 >= MEMORY_LIMIT
    if memory:
        problems.append("memory")
    signalled = spec is not None and bool(spec.signal)
    if code not in (0, 1, 2) and not timed_out and not signalled:
        problems.append(f"exit {code}")
    if TRACEBACK in stdout or TRACEBACK in stderr:
        problems.append("traceback")
    error_lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("onnxroof: warning")]
    if not api and code == 2 and len(error_lines) > 1:
        record["note"] = "more than one error line"
    texts = {"stdout": stdout, "stderr": stderr}
    for path in outputs:
        p = Path(path)
        content = p.read_text("utf-8", "replace") if p.is_file() else None
        # check writes each model's line, a refused model's too (exit 2): only a crash must keep the file
        failed = code not in (0, 1, 2) if shown.startswith("onnxroof check") else code not in (0, 1)
        if failed and content != SENTINEL:
            problems.append(f"clobbered {p.name}")
        if content is not None and content != SENTINEL:
            texts[p.name] = content
    for p, data in before.items():
        if not p.exists() or p.read_bytes() != data:
            problems.append(f"clobbered input {p.name}")
    for where, text in texts.items():
        if where.endswith((".html", ".svg")):
            if "<img src=x onerror" in text:
                problems.append(f"html injection in {where}")
            continue
        if ESCAPES.search(text):
            problems.append(f"terminal escape in {where}")
        if "<img src=x onerror" in text and ("markdown" in shown):
            problems.append(f"raw html in {where}")
    is_csv = "csv" in shown.split("--format")[-1][:5] if "--format" in shown else False
    if is_csv and code in (0, 1):
        csv_text = texts.get("out.csv", stdout)
        for row in csv.reader(io.StringIO(csv_text)):
            bad = [cell for cell in row if CSV_FORMULA.search(cell) and not _number(cell)]
            if bad:
                problems.append(f"csv formula {bad[0][:30]!r}")
                break
    if "--format json" in shown and code in (0, 1) and stdout.strip():
        try:
            json.loads(stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as exc:
            problems.append(f"invalid json ({str(exc)[:40]})")
    written = [name for name in texts if name not in ("stdout", "stderr")]
    # (a script reports in its own files; calibrate --save writes the targets folder)
    if not api and code == 0 and not stdout.strip() and not written and not (spec and (spec.script or "--save" in spec.argv)):
        problems.append("exit 0 without output")
    if budget and spec is not None:
        problems += _budget_problems(record, spec, stdout, texts, error_lines, directory, timed_out)
        if spec.check is not None:
            try:
                problems += spec.check(record, directory)
            except Exception as exc:  # the harness's own failure: recorded, never hidden
                problems.append(f"harness error in check {type(exc).__name__}: {exc}")
    return record


def _plain_path(path: str) -> bool:
    """An output path in an existing folder, not a link, and within the system's name length (a
    case may give one past it, which onnxroof must refuse and the harness must not trip on)."""
    try:
        return Path(path).parent.is_dir() and not Path(path).is_symlink()
    except OSError:
        return False


OUTPUT_SUFFIXES = (".html", ".txt", ".csv", ".svg", ".json", ".jsonl", ".md")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what every output shows as '?' (tab, newline aside)
LARGE_MB = 1024  # issue 43's "runs over 1 GB" (its 10 s and 500 MB: Run.seconds, Run.megabytes)
FOREIGN_TEMPORARY = {".ses"}  # onnxruntime's session file in $TMPDIR, not onnxroof's to remove
BUDGET_TIME_LIMIT = Run.limit


def _budget_problems(record: dict, spec: Run, stdout: str, texts: dict, error_lines: list, directory: Path,
                     timed_out: bool) -> list[str]:
    """Issue 43's acceptance for one run: exit 0 or 2 with one line, 10 s, 500 MB, outputs that parse,
    no temporary file left."""
    problems = []
    code, signalled = record["code"], bool(spec.signal)
    if record["seconds"] > spec.seconds and not signalled and not timed_out:
        problems.append("over 10 s")
    if record["rss_mb"] > spec.megabytes:
        problems.append("over 500 MB")
    if record["rss_mb"] > LARGE_MB:
        problems.append("over 1 GB")
    if not signalled and not timed_out and code in (0, 1, 2) and code not in spec.codes:
        problems.append(f"exit {code} (expected {' or '.join(map(str, spec.codes))})")
    if code == 2 and len(error_lines) != 1 and not spec.script and not record["command"].startswith("onnxroof check"):
        problems.append(f"{len(error_lines)} error lines")
    if any("unrecognized arguments" in line for line in error_lines):
        problems.append("flag not supported")
    if record["command"].startswith("onnxroof graph") and record["command"].endswith(("-o -", "-o - -q")):
        problems += _invalid_output("stdout.svg", stdout, code)
    for where, text in texts.items():
        problems += _invalid_output(where, text, code)
        shown = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S) if where.endswith(".html") else text
        if CONTROL.search(shown):
            problems.append(f"control character in {where}")
        elif CONTROL.search(text):  # raw DEL or C1 in a JSON island, which the page's script shows
            problems.append(f"control character in the data of {where}")
    left = sorted(p.name for p in (directory / "tmp").iterdir() if p.name not in FOREIGN_TEMPORARY) \
        if (directory / "tmp").is_dir() else []
    if left:
        problems.append(f"left temporary files ({', '.join(left)[:60]})")
    return problems


def _invalid_output(where: str, text: str, code: int) -> list[str]:
    """An SVG that is not XML, an HTML page cut short or with a JSON island that does not parse,
    JSON a strict parser refuses."""
    if code not in (0, 1) or not text.strip() or text == SENTINEL:
        return []
    strict = dict(parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    try:
        if where.endswith(".svg"):
            ElementTree.fromstring(text.encode("utf-8"))
        elif where.endswith(".html"):
            if not text.rstrip().endswith("</html>"):
                return [f"invalid output {where} (cut short)"]
            for island in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', text, re.S):
                json.loads(island, **strict)
        elif where.endswith(".json"):
            json.loads(text, **strict)
        elif where.endswith(".jsonl"):
            for line in text.splitlines():
                json.loads(line, **strict)
    except (ElementTree.ParseError, ValueError) as exc:
        return [f"invalid output {where} ({str(exc)[:50]})"]
    return []


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# Tally


def render(results: list[dict], elapsed: float, args) -> str:
    runs = [r for result in results for r in result["runs"]]
    kinds = {}
    for result in results:
        kinds[result["kind"]] = kinds.get(result["kind"], 0) + 1

    def count(predicate):
        return sum(1 for r in runs if any(predicate(p) for p in r["problems"]))

    exit3 = count(lambda p: p.startswith("exit"))
    bare = count(lambda p: p.startswith("bare exception"))
    rows = [("inputs", len(results)), ("runs (subprocesses)", len(runs)),
            ("exit 3 or killed by a signal (CLI) / bare exception (API)", f"{exit3} / {bare}"),
            ("tracebacks", count(lambda p: p == "traceback")),
            (f"hangs past {TIME_LIMIT} s ({BUDGET_TIME_LIMIT} s in issue 43's families)", count(lambda p: p == "timeout")),
            ("runs past 2 GB (limit hit)", count(lambda p: p == "memory")),
            ("clobbered files", count(lambda p: p.startswith("clobbered"))),
            ("injections (terminal escapes, CSV formulas, raw HTML)",
             count(lambda p: p.startswith(("terminal", "csv", "html", "raw html")))),
            ("invalid JSON (NaN, Infinity)", count(lambda p: p.startswith("invalid json"))),
            ("wrong API argument accepted", count(lambda p: p == "wrong argument accepted")),
            ("exit 0 without any output", count(lambda p: p == "exit 0 without output")),
            ("invalid convolution costed (exit 0)", count(lambda p: p == "invalid model costed")),
            *budget_rows(count, results)]
    codes = {}
    for r in runs:
        codes[r["code"]] = codes.get(r["code"], 0) + 1
    command = f"python benchmarks/adversarial.py --jobs {args.jobs} --mutants {args.mutants}" + \
        (f" --family {args.family}" if args.family else "") + (f" --only '{args.only}'" if args.only else "")
    lines = [f"Command: `{command} --write` "
             f"({elapsed / 60:.1f} min on this machine). Each run is a subprocess limited to {TIME_LIMIT} s and "
             f"{MEMORY_LIMIT >> 30} GB of address space.", "",
             "Inputs: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ". Exit codes: " +
             ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())) + ".", "",
             "| check | count |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows), ""]
    failing = [(result, r) for result in results for r in result["runs"] if r["problems"]]
    if failing:
        lines += ["Failing runs (rebuild one with `python benchmarks/adversarial.py --only 'NAME$' --keep DIR`; "
                  "DIR/NAME then holds its files):", "",
                  "| case | how it is built | command | problems | exit, time, peak RSS: last stderr line |",
                  "|---|---|---|---|---|"]
        for result, r in failing:
            cell = lambda s: _md(s)  # noqa: E731
            lines.append(f"| `{result['name']}` | {cell(result['how'])} | `{cell(r['command'][:110])}` | "
                         f"{cell(', '.join(r['problems']))} | {r['code']}, {r['seconds']} s, {r['rss_mb']} MB: "
                         f"{cell(r['stderr'][:160] or r['stdout'][:160])} |")
    else:
        lines.append("No failing run.")
    notes = [(result, r) for result in results for r in result["runs"] if r.get("note")]
    if notes:
        lines += ["", f"Runs refused with more than one stderr line (not counted above): {len(notes)}, e.g. " +
                  ", ".join(f"`{result['name']}`" for result, _ in notes[:8]) + "."]
    slow = sorted(runs, key=lambda r: -r["seconds"])[:5]
    lines += ["", "Slowest runs: " + "; ".join(f"`{_md(r['command'][:80])}` {r['seconds']} s ({r['rss_mb']} MB)" for r in slow) + "."]
    return "\n".join(lines)


def _md(text: str) -> str:
    text = text.encode("unicode_escape").decode("ascii")
    return text.replace("|", "\\|").replace("<", "&lt;").replace("`", "'")



BUDGET_CHECKS = [  # (row of the tally, the problems it counts): issue 43's acceptance, its families only
    ("issue 43: over 10 s", lambda p: p == "over 10 s" or p == "timeout"),
    ("issue 43: over 500 MB peak RSS", lambda p: p == "over 500 MB"),
    ("issue 43: runs over 1 GB", lambda p: p == "over 1 GB"),
    ("issue 43: invalid outputs (SVG, HTML, JSON that do not parse; -o file half-written or clobbered)",
     lambda p: p.startswith(("invalid output", "invalid json", "clobbered", "half-written"))),
    ("issue 43: not exit 0 or 2 with one line", lambda p: p.startswith("exit") or p.endswith(" error lines")),
    ("issue 43: other (control characters, temporary files, target file not named, ...)",
     lambda p: not p.startswith(("over ", "timeout", "memory", "invalid", "clobbered", "half-written", "exit",
                                 "traceback")) and not p.endswith(" error lines")),
]


def budget_rows(count, results: list[dict]) -> list[tuple]:
    if not any(result.get("family") for result in results):
        return []
    family = [r for result in results if result.get("family") for r in result["runs"]]
    return [(label, sum(1 for r in family if any(predicate(p) for p in r["problems"])))
            for label, predicate in BUDGET_CHECKS]


def failure_lines(results: list[dict], elapsed: float, args) -> str:
    """One line per failing run (family, case, command, exit, time, peak RSS, first stderr line, problems)."""
    runs = [(result, r) for result in results for r in result["runs"]]
    failing = [(result, r) for result, r in runs if r["problems"]]
    tally = {}
    for _result, r in failing:
        for problem in r["problems"]:
            key = re.sub(r" \(.*", "", problem)
            tally[key] = tally.get(key, 0) + 1
    lines = [f"# adversarial.py tally: {len(failing)} failing runs of {len(runs)} ({len(results)} inputs), "
             f"{elapsed / 60:.1f} min", "",
             "Problems: " + ", ".join(f"{k}: {n}" for k, n in sorted(tally.items(), key=lambda kv: -kv[1])) + ".", "",
             "family | case | command | exit | time | peak RSS | first stderr line | problems", "---|---|---|---|---|---|---|---"]
    for result, r in failing:
        lines.append(" | ".join([result.get("family") or result["kind"], result["name"], f"`{_md(r['command'][:150])}`",
                                 str(r["code"]), f"{r['seconds']} s", f"{r['rss_mb']} MB",
                                 _md(r.get("stderr_first", r["stderr"])[:160]), _md(", ".join(r["problems"]))]))
    return "\n".join(lines) + "\n"
