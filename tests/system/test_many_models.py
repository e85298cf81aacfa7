"""Many models at once (issue 31, item 9): `check --jobs N` in worker processes, one JSON line per
model written as each finishes, a worker killed mid-run costing only its model, a per-model time
limit, a stopped run keeping the lines it wrote; analyze() results that pickle; and the model
store audited with Dask, as docs/ci.md shows it.

The models are x[1, k] @ w[k, 4]: k x 4 MACs and 4k parameters, so every number is known. The
plugin gives two ops of a test domain whose cost rules stop the worker analysing them: `Die` kills
its own process (a worker killed mid-run, as the out-of-memory killer would), `Nap` sleeps past
any time limit, `Stop` sends SIGTERM to the parent (a scheduler stopping the run)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxroof

PLUGIN = textwrap.dedent("""
    import os, signal, time
    from onnxroof import register
    from onnxroof.ops import OpCost

    def die(node):
        os.kill(os.getpid(), signal.SIGKILL)

    def nap(node):
        time.sleep(600)
        return OpCost()

    def stop(node):
        os.kill(os.getppid(), signal.SIGTERM)
        time.sleep(600)
        return OpCost()

    for name, rule in (("Die", die), ("Nap", nap), ("Stop", stop)):
        register(name, rule, family="elementwise", domain="test.stop")
    """)


def matmul(k: int, then: str | None = None) -> onnx.ModelProto:
    """x[1, k] @ w[k, 4]: 4k MACs, 4k parameters; ``then`` a test op on its output."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if then is None else "m"], name="mm")]
    if then is not None:
        nodes.append(helper.make_node(then, ["m"], ["y"], name=then.lower(), domain="test.stop"))
    weight = numpy_helper.from_array(np.zeros((k, 4), np.float32), "w")
    graph = helper.make_graph(
        nodes,
        f"k{k}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.stop", 1)])


def store(folder: Path, count: int, special: dict[int, str] | None = None) -> dict[str, int]:
    """``count`` models m000.onnx... with k = 1, 2, ...; model i runs ``special[i]`` after its
    MatMul. Returns each path and its k."""
    (folder / "nested").mkdir(parents=True)
    made = {}
    for i in range(count):
        path = folder / ("nested" if i % 2 else ".") / f"m{i:03}.onnx"
        onnx.save(matmul(i + 1, (special or {}).get(i)), path)
        made[str(path)] = i + 1
    return made


def check(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The onnxroof program itself (its workers fork from it, as they do for a user)."""
    plugin = cwd / "stops.py"
    plugin.write_text(PLUGIN)
    return subprocess.run(
        [sys.executable, "-m", "onnxroof.cli", "check", *argv, "--plugin", str(plugin), "-q"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_check_jobs_2_writes_a_line_per_model_and_survives_a_killed_worker(tmp_path):
    models = store(tmp_path / "store", 30, {11: "Die"})
    done = check(
        str(tmp_path / "store"), "--jobs", "2", "--format", "jsonl", "-o", str(tmp_path / "audit.jsonl"), cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr  # a model not analysed
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    records = {record["model"]: record for record in map(json.loads, lines)}
    assert len(lines) == 30 and records.keys() == models.keys()  # each model once, the folder walked into
    assert not (tmp_path / "audit.jsonl.partial").exists()
    killed = str(tmp_path / "store" / "nested" / "m011.onnx")
    assert records[killed]["status"] == "died" and "\n" not in records[killed]["error"]
    assert records[killed]["error"] == (
        f"{killed}: the worker process analysing it was killed by SIGKILL (out of "
        f"memory?) before it finished; analyse it alone to see why (onnxroof check {killed})"
    )
    for path, k in models.items():
        if path != killed:
            assert records[path]["status"] == "ok" and records[path]["schema"] == "onnxroof-check/1"
            assert records[path]["totals"]["macs"] == 4 * k and records[path]["totals"]["params"] == 4 * k


def test_a_model_over_the_time_limit_is_reported_and_the_run_goes_on(tmp_path):
    # one at a time (--jobs 1): the limit still needs a worker process, which is killed and replaced
    models = store(tmp_path / "store", 3, {1: "Nap"})
    done = check(*models, "--jobs", "1", "--timeout", "2", cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 2 and len(lines) == 3
    first, nap, last = models
    assert lines[0].startswith(f"{first}: params 4, MAC-FLOPs 8,") and lines[2].startswith(f"{last}: params 12,")
    assert lines[1] == (
        f"{nap}: error: over the time limit: not done in 2 s (--timeout): give it more time, or analyse it alone"
    )


def test_a_stopped_run_keeps_its_whole_lines_in_the_partial_file_and_leaves_the_output_as_it_was(tmp_path):
    # in order (--jobs 1, in a worker for --timeout): m000 and m001 are done when m002 stops the run
    models = list(store(tmp_path / "store", 4, {2: "Stop"}))
    (tmp_path / "audit.jsonl").write_text("the last run's\n")
    done = check(*models, "--timeout", "300", "--format", "jsonl", "-o", str(tmp_path / "audit.jsonl"), cwd=tmp_path)
    assert done.returncode == 128 + 15  # SIGTERM's, as a shell reports a run it ended (Ctrl-C's is 130)
    assert (tmp_path / "audit.jsonl").read_text() == "the last run's\n"
    (partial,) = tmp_path.glob("audit.jsonl.*.partial")  # a fresh name, made for this run
    assert [json.loads(line)["model"] for line in partial.read_text().splitlines()] == models[:2]
    assert partial.read_text().endswith("\n")
    assert f"onnxroof: stopped: the 2 model(s) done are in {partial}" in done.stderr


def test_check_jsonl_in_this_process_is_the_text_line_s_numbers(tmp_path, capsys):
    from onnxroof.cli.app import main

    onnx.save(matmul(8), tmp_path / "a.onnx")
    assert main(["check", str(tmp_path / "a.onnx"), "--format", "jsonl", "--fail-if", "params>16", "-q"]) == 1
    (record,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert record["status"] == "budget_broken" and record["totals"]["params"] == 32 and record["totals"]["macs"] == 32
    assert record["budgets"] == [
        {
            "budget": "params>16",
            "value": 32,
            "broken": True,
            "text": "params>16: params is 32 -> BROKEN",
            "bound": False,
        }
    ]
    assert main(["check", str(tmp_path), "-q"]) == 0  # a folder: every .onnx file under it
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'a.onnx'}: params 32, MAC-FLOPs 64,")
    (tmp_path / "empty").mkdir()
    assert main(["check", str(tmp_path / "empty"), "-q"]) == 2
    assert "empty: error: " in capsys.readouterr().out


def test_an_analysis_pickles_with_its_source_and_reviews_on_the_other_side(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(matmul(64), path)
    for model in (str(path), onnx.load(path)):
        analysis = onnxroof.analyze(model, targets=["l4"])
        copy = pickle.loads(pickle.dumps(analysis))
        assert copy.totals.macs == 256 and copy.source == analysis.source  # not reviewed yet: it travels
        assert [f.title for f in copy.review()] == [f.title for f in analysis.review()] != []


def test_a_model_store_audited_on_a_local_dask_cluster(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    models = store(tmp_path / "store", 6)
    (tmp_path / "store" / "broken.onnx").write_bytes(b"not a model")
    paths = sorted(str(path) for path in (tmp_path / "store").rglob("*.onnx"))
    # docs/ci.md's example: one small record per model, made where the model is
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        futures = client.map(audit_one, paths)
        model = {future.key: path for future, path in zip(futures, paths)}
        rows = {}
        for future in distributed.as_completed(futures):
            row = (
                future.result()
                if future.status == "finished"
                else {"model": model[future.key], "error": repr(future.exception())}
            )
            rows[row["model"]] = row
        first = next(iter(models))
        whole = client.submit(onnxroof.analyze, first).result()  # an Analysis travels too
    broken = str(tmp_path / "store" / "broken.onnx")
    assert rows.pop(broken)["error"] == (
        f"ModelError: {broken}: not a readable ONNX protobuf (Error parsing message "
        "with type 'onnx.ModelProto': Wire format was corrupt): the file is truncated "
        "or corrupt, or not an ONNX model; re-download or re-export it"
    )
    assert {path: row["macs"] for path, row in rows.items()} == {path: 4 * k for path, k in models.items()}
    assert whole.totals.macs == 4 * models[first]


def audit_one(path: str) -> dict:
    """What docs/ci.md's Dask example maps over the store."""
    try:
        analysis = onnxroof.analyze(path, targets=["l4"])
    except Exception as exc:  # an unreadable model: its row says why, and the audit goes on
        return {"model": path, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "model": path,
        "macs": analysis.totals.macs,
        "params": analysis.totals.params,
        "peak_bytes": analysis.memory.model_order.peak_bytes,
        "latency_s": analysis.targets[0].latency_s,
    }
