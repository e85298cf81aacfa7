"""`onnxroof calibrate` on the command line, with the measuring faked: the file it writes, where,
and its errors."""

from __future__ import annotations

import pytest

from onnxroof.cli.app import main
from onnxroof.measure import calibration
from onnxroof.roofline.targets import parse_target

from measurements import hand_calibration


@pytest.fixture
def fake_calibration(monkeypatch):
    seen = {}

    def fake(seconds, threads=None, progress=None, **_):
        seen.update(seconds=seconds, threads=threads)
        if progress:
            progress("measuring (fake)")
        return hand_calibration()

    monkeypatch.setattr(calibration, "calibrate", fake)
    return seen


def test_cli_writes_the_target_file_atomically(tmp_path, capsys, fake_calibration):
    out = tmp_path / "this-machine.toml"
    code = main(["calibrate", "-o", str(out), "--seconds", "5", "--threads", "3"])
    stdout, stderr = capsys.readouterr()
    assert code == 0 and stdout == ""
    assert fake_calibration == {"seconds": 5.0, "threads": 3}
    assert "measuring (fake)" in stderr and f"wrote {out}" in stderr
    target = parse_target(out)
    assert target.name == "this-machine" and target.peak_ops_per_s["fp32"].tag == "measured"
    assert [p.name for p in tmp_path.iterdir()] == ["this-machine.toml"]  # no temporary left behind


def test_cli_prints_to_stdout_and_is_quiet_with_q(capsys, fake_calibration):
    code = main(["calibrate", "-q", "--name", "box"])
    stdout, stderr = capsys.readouterr()
    assert code == 0 and stderr == ""
    assert 'name = "box"' in stdout and 'schema = "onnxroof-target/1"' in stdout
    assert fake_calibration["seconds"] == calibration.DEFAULT_SECONDS


@pytest.mark.parametrize("argv, message", [
    (["calibrate", "--seconds", "0.5"], "at least 2 seconds"),
    (["calibrate", "--seconds", "soon"], "expected a number of seconds"),
    (["calibrate", "--threads", "0"], "positive integer"),
    (["calibrate", "-o", "/no/such/dir/x.toml"], "does not exist"),
])
def test_cli_errors_are_one_line_with_exit_2(capsys, fake_calibration, argv, message):
    code = main(argv)
    _, stderr = capsys.readouterr()
    assert code == 2 and message in stderr and stderr.count("\n") == 1
