"""Output files written whole (core/files.py): names near the file system's length limit."""

from __future__ import annotations

import pytest

from onnxroof.core.errors import UsageError
from onnxroof.core.files import LineStream, write_atomically

# Linux file systems hold names of at most 255 bytes; the temporary beside the file adds a dot,
# random letters and ".tmp" or ".partial", so it must not copy the whole name
LONGEST = 255


def test_an_output_named_with_the_longest_name_allowed_is_written(tmp_path):
    target = tmp_path / ("y" * LONGEST)
    write_atomically(target, "whole\n")
    assert target.read_text() == "whole\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary left


def test_a_name_of_two_byte_letters_near_the_limit_is_written(tmp_path):
    target = tmp_path / ("é" * 127)  # 254 bytes: the temporary's name cut inside no letter
    write_atomically(target, "x")
    assert target.read_text() == "x"


def test_check_lines_stream_to_a_file_named_with_the_longest_name(tmp_path):
    target = tmp_path / ("z" * LONGEST)
    stream = LineStream(target)
    stream.write("{}")
    stream.finish()
    assert target.read_text() == "{}\n"


def test_an_output_name_over_the_limit_is_a_usage_error_not_a_crash(tmp_path):
    with pytest.raises(UsageError, match="too long"):
        write_atomically(tmp_path / ("x" * 300), "x")


SIGTERM_MID_WRITE = """
import os, signal, sys
from onnxroof.core.errors import Terminated
from onnxroof.core.files import write_atomically

def chunks():
    yield "half"
    os.kill(os.getpid(), signal.SIGTERM)  # a scheduler's stop while the text is still being made
    yield "rest"

try:
    write_atomically(sys.argv[1], chunks())
except Terminated:
    sys.exit(143)
"""


def test_sigterm_while_an_output_is_written_leaves_the_old_file_and_no_temporary(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "out.json"
    target.write_text("old\n")
    done = subprocess.run([sys.executable, "-c", SIGTERM_MID_WRITE, str(target)], capture_output=True, timeout=60)
    assert done.returncode == 143, done.stderr  # not killed outright (-15) with the temporary left
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
