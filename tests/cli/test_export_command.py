"""`onnxroof export` on the command line: where the files go, and its errors in one line (exit 2).
The figures themselves are checked by hand in tests/report/test_viewer_overlays.py."""

from __future__ import annotations

import json

import onnx
from models import chain_model

from onnxroof.cli.app import main


def _model(tmp_path) -> str:
    path = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(path))
    return str(path)


def test_netron_attachment_beside_the_model(tmp_path):
    assert main(["export", _model(tmp_path), "--to", "netron", "--target", "myriad-x", "-q"]) == 0
    attachment = json.loads((tmp_path / "chain.onnxroof.json").read_text(encoding="utf-8"))
    assert attachment["signature"] == "netron:attachment"
    # matmul_b: x [1, 1000] after relu_a times w1 [1000, 2000]: 1 x 1000 x 2000 MACs
    figures = {
        i["name"]: i["value"] for i in attachment["metrics"] if i["kind"] == "node" and i["target"] == "matmul_b"
    }
    assert figures["MACs"] == 2_000_000 and figures["parameters"] == 2_000_000
    assert {"myriad-x: kernel", "myriad-x: time", "myriad-x: share", "myriad-x: bound"} <= set(figures)


def test_netron_without_a_target_has_the_nodes_figures(tmp_path):
    out = tmp_path / "out.json"
    assert main(["export", _model(tmp_path), "--to", "netron", "-o", str(out), "-q"]) == 0
    figures = {i["name"]: i["value"] for i in json.loads(out.read_text())["metrics"] if i["target"] == "matmul_d"}
    assert figures["MACs"] == 2000 * 500 and not any(":" in name for name in figures)


def test_model_explorer_one_file_per_target_and_metric(tmp_path):
    folder = tmp_path / "overlays"
    folder.mkdir()
    argv = [
        "export",
        _model(tmp_path),
        "--to",
        "model-explorer",
        "--target",
        "myriad-x",
        "--target",
        "l4",
        "-o",
        str(folder),
        "-q",
    ]
    assert main(argv) == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "chain.l4.bound.json",
        "chain.l4.share.json",
        "chain.myriad-x.bound.json",
        "chain.myriad-x.share.json",
    ]
    share = json.loads((folder / "chain.myriad-x.share.json").read_text())["test"]["results"]
    # the shares of the nodes that run, in percent, add up to the latency's 100%
    assert abs(sum(r["value"] for r in share.values()) - 100) < 0.01


def test_model_explorer_without_a_target_is_one_line_exit_2(tmp_path, capsys):
    assert main(["export", _model(tmp_path), "--to", "model-explorer"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--target" in err


def test_model_explorer_output_must_be_a_folder(tmp_path, capsys):
    missing = tmp_path / "no-such-folder"
    assert main(["export", _model(tmp_path), "--to", "model-explorer", "--target", "l4", "-o", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a folder" in err and not missing.exists()


def test_unknown_viewer_and_missing_to_are_one_line_exit_2(tmp_path, capsys):
    model = _model(tmp_path)
    for argv in (["export", model, "--to", "tensorboard"], ["export", model]):
        assert main(argv) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_no_findings_leaves_the_verdict_out(tmp_path):
    out = tmp_path / "out.json"
    argv = ["export", _model(tmp_path), "--to", "netron", "--target", "l4", "-o", str(out), "-q"]
    assert main(argv) == 0 and "l4: verdict" in out.read_text()
    assert main([*argv, "--no-findings"]) == 0 and "l4: verdict" not in out.read_text()
