"""``check -o FILE`` streams its lines into a fresh partial file beside FILE (issue 43.6): created
exclusively under a new name, so a symbolic link planted at the old fixed ``FILE.partial`` is
never followed, and two runs on one FILE each write their own file, never mixing lines."""

from __future__ import annotations

import json

from conftest import one_error_line, relu_file, run

from onnxroof.core.files import LineStream


def test_a_planted_link_at_the_old_partial_name_is_not_followed(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    output = tmp_path / "audit.jsonl"
    (tmp_path / "audit.jsonl.partial").symlink_to(victim)
    code, _, err = run(capsys, "check", str(model), "--format", "jsonl", "-o", str(output), "-q")
    assert code == 0, err
    assert victim.read_text() == "keep me\n"  # the link's target is untouched
    assert not output.is_symlink()
    lines = output.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["status"] == "ok"  # one model, one line


def test_two_streams_on_one_file_never_share_their_partial_file(tmp_path):
    output = tmp_path / "audit.jsonl"
    first, second = LineStream(output), LineStream(output)
    assert first.partial != second.partial
    first.write("a1")
    second.write("b1")
    first.write("a2")
    first.finish()
    assert output.read_text() == "a1\na2\n"  # only the first run's lines
    second.write("b2")
    second.finish()
    assert output.read_text() == "b1\nb2\n"  # the second replaces it whole
    assert not list(tmp_path.glob("*.partial"))


def test_a_stopped_stream_leaves_the_old_file_and_whole_lines(tmp_path):
    output = tmp_path / "audit.jsonl"
    output.write_text("old\n")
    stream = LineStream(output)
    stream.write("done")
    stream.close()  # stopped before finish()
    assert output.read_text() == "old\n"
    assert stream.partial is not None and stream.partial.parent == tmp_path
    assert stream.partial.name.startswith("audit.jsonl.") and stream.partial.read_text() == "done\n"


def test_a_folder_that_cannot_hold_the_partial_file_is_one_line(capsys, tmp_path):
    model = relu_file(tmp_path / "m.onnx")
    code, _, err = run(capsys, "check", str(model), "-o", str(tmp_path / "missing" / "audit.jsonl"))
    assert code == 2 and one_error_line(err), err


def test_a_pipe_no_process_reads_is_one_line_not_a_wait(capsys, tmp_path, monkeypatch):
    # written through, as a pipe is, but opened non-blocking: with no reader within the wait (made
    # 0 here: the test times nothing) it is an error, not a wait for ever
    import os

    from onnxroof.core import files

    monkeypatch.setattr(files, "PIPE_READER_WAIT_S", 0.0)

    model = relu_file(tmp_path / "m.onnx")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for command in ("check", "summary"):
        code, _, err = run(capsys, command, str(model), "-o", str(pipe), "-q")
        assert code == 2 and one_error_line(err), err
        assert f"-o {pipe}: cannot be written (a pipe that no process read for 0 s)" in err
