"""The checks benchmarks/adversarial.py holds issue 43's families to: an output that does not parse
is caught, one that does is not, and every case of the families is named once and budgeted."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import adversarial  # noqa: E402
import adversarial_round2  # noqa: E402
import adversarial_running  # noqa: E402


def test_an_svg_holding_an_escape_byte_is_not_xml():
    assert adversarial_running._invalid_output("out.svg", "<svg><text>a\x1bb</text></svg>", 0)
    assert not adversarial_running._invalid_output("out.svg", "<svg><text>a?b</text></svg>", 0)


def test_an_html_page_cut_short_or_with_a_nan_in_its_data_is_invalid():
    whole = '<html><script type="application/json" id="d">{"a": 1}</script></html>\n'
    assert not adversarial_running._invalid_output("out.html", whole, 0)
    assert adversarial_running._invalid_output("out.html", whole[:30], 0)
    assert adversarial_running._invalid_output("out.html", whole.replace("1", "NaN"), 0)


def test_strict_json_refuses_nan_and_each_jsonl_line_is_read():
    assert adversarial_running._invalid_output("out.json", '{"a": NaN}', 0)
    assert adversarial_running._invalid_output("out.jsonl", '{"a": 1}\n{"a": ', 0)
    assert not adversarial_running._invalid_output("out.jsonl", '{"a": 1}\n{"a": 2}\n', 0)


def test_a_refused_run_keeps_its_sentinel_and_is_not_parsed():
    assert not adversarial_running._invalid_output("out.svg", "<svg", 2)
    assert not adversarial_running._invalid_output("out.svg", adversarial.SENTINEL, 0)


def test_every_family_of_issue_43_is_there_with_cases_named_once_and_budgeted():
    cases = adversarial_round2.cases()
    assert len({c.name for c in cases}) == len(cases)
    assert {c.family for c in cases} == {f"43.{i}" for i in range(1, 14)}
    assert all(c.budget and c.runs and all(isinstance(r, adversarial.Run) for r in c.runs) for c in cases)


def test_the_failures_file_has_a_line_per_failing_run():
    results = [
        {
            "name": "x",
            "kind": "round2",
            "family": "43.1",
            "how": "",
            "runs": [
                {
                    "command": "onnxroof summary DIR/m.onnx",
                    "code": 3,
                    "seconds": 12.5,
                    "rss_mb": 900,
                    "stderr": "last",
                    "stderr_first": "first",
                    "problems": ["exit 3", "over 10 s"],
                },
                {
                    "command": "onnxroof check DIR/m.onnx",
                    "code": 0,
                    "seconds": 1,
                    "rss_mb": 70,
                    "stderr": "",
                    "problems": [],
                },
            ],
        }
    ]
    text = adversarial.failure_lines(results, 60, None)
    rows = [line for line in text.splitlines() if line.startswith("43.1 |")]
    assert rows == ["43.1 | x | `onnxroof summary DIR/m.onnx` | 3 | 12.5 s | 900 MB | first | exit 3, over 10 s"]
