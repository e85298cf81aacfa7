"""`onnxroof calibrate` on the command line, with the measuring faked: the file it writes, where,
and its errors."""

from __future__ import annotations

import pytest
from measurements import hand_calibration

from onnxroof.cli.app import main
from onnxroof.measure import calibration
from onnxroof.roofline.targets import parse_target


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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["calibrate", "--seconds", "0.5"], "at least 2 seconds"),
        (["calibrate", "--seconds", "soon"], "expected a number of seconds"),
        (["calibrate", "--threads", "0"], "positive integer"),
        (["calibrate", "-o", "{tmp}/a-file/x.toml"], "cannot make the folder"),  # a folder where a file is
        (["calibrate", "-o", "{tmp}/x.toml", "--save"], "give one of them"),
    ],
)
def test_cli_errors_are_one_line_with_exit_2(capsys, fake_calibration, argv, message, tmp_path):
    (tmp_path / "a-file").write_text("")
    code = main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    _, stderr = capsys.readouterr()
    assert code == 2 and message in stderr and stderr.count("\n") == 1


def test_output_folders_are_made_and_save_writes_where_target_finds_it(capsys, fake_calibration, tmp_path, monkeypatch):
    # the README's flow in a fresh folder: calibrate into hardware/ (made), or --save to the user's
    # targets folder; --target this-machine then finds it from any folder
    from onnxroof.roofline.targets import load_target

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ONNXROOF_CWD_TARGETS")  # ./hardware searched, as a user's shell does (conftest.py)
    monkeypatch.setenv("ONNXROOF_TARGETS", str(tmp_path / "mine"))
    assert main(["calibrate", "-q", "-o", "hardware/this-machine.toml"]) == 0
    assert (tmp_path / "hardware" / "this-machine.toml").is_file()
    assert load_target("this-machine").path.endswith("hardware/this-machine.toml")
    assert main(["calibrate", "-q", "--save", "--name", "lab-box"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_target("lab-box").path == str(tmp_path / "mine" / "lab-box.toml")
    capsys.readouterr()
    assert (
        main(["targets"]) == 0
        and f"target lab-box is read from {tmp_path / 'mine' / 'lab-box.toml'}" in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["calibrate", "--name", "x" * 300], "is 300 characters long; a target name has at most 64"),
        (["calibrate", "--save", "--name", "../../x"], "may hold only letters, digits"),
        (["calibrate", "--name", ".hidden"], "start with a letter or digit"),
        (["calibrate", "--name", ""], "may hold only letters, digits"),
        (["calibrate", "-o", "{tmp}/my box.toml"], "the file's stem, the target's name by default, may hold only"),
    ],
)
def test_a_bad_name_is_refused_before_any_measuring(capsys, monkeypatch, tmp_path, argv, message):
    # the measuring must not start: a name that cannot name a target is known from the flags alone
    def measuring(*_, **__):
        raise AssertionError("measured before checking the name")

    monkeypatch.setattr(calibration, "calibrate", measuring)
    monkeypatch.setenv("ONNXROOF_TARGETS", str(tmp_path / "mine"))
    code = main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    _, stderr = capsys.readouterr()
    assert code == 2 and message in stderr and stderr.count("\n") == 1, stderr
    assert not (tmp_path / "mine").exists() and not (tmp_path.parent / "x.toml").exists()  # nothing written


def test_a_name_of_64_characters_is_a_target_name(capsys, fake_calibration, tmp_path, monkeypatch):
    monkeypatch.setenv("ONNXROOF_TARGETS", str(tmp_path))
    name = "a" * 64  # the longest name: 64 characters
    assert main(["calibrate", "-q", "--save", "--name", name]) == 0
    assert parse_target(tmp_path / f"{name}.toml").name == name
