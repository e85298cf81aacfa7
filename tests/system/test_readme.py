"""The README's figures come from the docs it cites (issue 47): each figure the README states about
a measurement, a validation or a default is read here in the README and in its source (the doc's
own sentence or table, or the code constant and the CLI's --help that state it), and the two must
agree. A doc that moves on takes the README along, or this fails."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
WORDS = {"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def _flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as one space: a sentence reads whole."""
    return re.sub(r"\s+", " ", text)


def _one(pattern: str, text: str) -> tuple[str, ...]:
    """The groups of the only match of ``pattern`` in ``text``."""
    found = re.findall(pattern, _flat(text))
    assert len(found) == 1, (pattern, found)
    return found[0] if isinstance(found[0], tuple) else (found[0],)


def _doc(name: str) -> str:
    return (REPO / "docs" / name).read_text()


def test_the_published_validation_figures_are_the_doc_s():
    doc = _doc("validation-published.md")
    fitted_rows, fitted = _one(r"\*\*Fitted rows, (\d+)\*\*: median \|error\| (\d+) %", doc)
    held = _one(r"\*\*The same rows held out\*\* \([^)]*\): median \|error\| (\d+) %", doc)[0]
    (forecasting,) = _one(r"(\w+) bundled targets now \*\*forecast\*\*", doc)
    unseen_rows, unseen = _one(
        r"\*\*Rows no fit saw, (\d+)\*\*: TensorRT's BERT demo .*? median \|error\| (\d+) %", doc
    )
    # the doc list beside it, and the section on bound or forecast
    readme = _one(
        r"(\w+) bundled targets forecast: median error (\d+) % on the (\d+) rows their figures were fitted "
        r"on, (\d+) % with each row's model family left out of the fit",
        README,
    )
    assert readme == (forecasting, fitted, fitted_rows, held)
    assert _one(r"(\w+) bundled targets forecast: h100-sxm", README)[0] == forecasting
    assert _one(r"fits on (\d+) published measurements", README)[0] == fitted_rows
    unseen_in_readme = _one(r"\((\d+) rows of TensorRT's BERT demo that no fit saw: median error (\d+) %\)", README)
    assert unseen_in_readme == (unseen_rows, unseen)


def test_the_number_of_forecasting_targets_is_the_bundled_files():
    from onnxroof.roofline.target_paths import bundled_targets
    from onnxroof.roofline.targets import LatencyKind, parse_target

    forecasting = [
        name for name, path in bundled_targets().items() if parse_target(path).latency_kind == LatencyKind.FORECAST
    ]
    (word,) = _one(r"(\w+) bundled targets now \*\*forecast\*\*", _doc("validation-published.md"))
    assert len(forecasting) == WORDS[word.lower()], forecasting


def test_the_l4_error_band_is_the_doc_s_and_the_target_s():
    from onnxroof.roofline.targets import load_target

    (band,) = _one(r"On l4 the forecast is ±(\d+) %", README)
    assert _one(r"\*\*Error bands\*\* \([^)]*\): [^.]*?\bl4 ±(\d+) %", _doc("validation-published.md"))[0] == band
    assert round(load_target("l4").error_band.value * 100) == int(band)


def test_the_formulas_are_fitted_and_checked_where_the_code_and_docs_formulas_md_say():
    from onnxroof.symbolic.formulas import CHECK, SAMPLES
    from onnxroof.symbolic.latency_ranges import FAR

    samples, check, far = _one(
        r"runs the ordinary analysis at ([\d, and]+) per free dim .*? checks them at (\d+) "
        r"and at ([\d,]+) \(",
        README,
    )
    assert [int(n) for n in re.findall(r"\d+", samples)] == list(SAMPLES)
    assert (int(check), int(far.replace(",", ""))) == (CHECK, FAR)
    doc = _doc("formulas.md")
    assert _one(r"Every formula is checked at (\d+) and at ([\d,]+) per dim", doc) == (check, far)
    # the header every symbolic output prints, as docs/formulas.md shows it
    assert _one(r"\(exact; fitted at ([\d, ]+) per dim, checked at (\d+) and ([\d,]+)\)", doc) == (
        ", ".join(map(str, SAMPLES)),
        check,
        far,
    )


def test_the_findings_cost_is_the_performance_doc_s():
    from onnxroof.findings.variants import REANALYSE_NODES

    largest, nodes, with_findings, without = _one(
        r"Those analyse the model again for their gains, within ([\d,]+) nodes in all \(each variant counts the "
        r"model's nodes\): on a ([\d,]+)-node chain, ([\d.]+) s against ([\d.]+) s;",
        README,
    )
    assert int(largest.replace(",", "")) == REANALYSE_NODES
    # the doc's newest table of fused runs: its first run at that size, without (`--no-findings`) and with
    lines = _doc("performance.md").splitlines()
    at = max(i for i, line in enumerate(lines) if line.startswith("| nodes | bare load + infer s | fused s"))
    header = lines[at]
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    row = next(line for line in lines[at:] if line.startswith(f"| {nodes} |") and line.count("|") == header.count("|"))
    cells = dict(zip(columns, (cell.strip() for cell in row.strip("|").split("|"))))
    assert cells["fused s"].split(",")[0] == without and cells["with findings s"].split(",")[0] == with_findings


def test_calibrate_s_time_is_its_help_s_default():
    from onnxroof.cli.app import build_parser
    from onnxroof.measure.calibration import DEFAULT_SECONDS

    (seconds,) = _one(r"measure this machine's roofs \(--seconds (\d+) by default\)", README)
    assert float(seconds) == DEFAULT_SECONDS
    parser = build_parser()
    calibrate = next(a for a in parser._actions if a.choices and "calibrate" in a.choices).choices["calibrate"]
    assert f"default {seconds};" in _flat(calibrate.format_help())


def test_the_test_command_shows_why_a_test_is_skipped():
    # issue 47: the README's command and .ci/run print each skip's reason (-rs)
    command = _one(r"python3 -m pip install -e \"\.\[test,profile\]\" && (python3 -m pytest [^\n`]*)", README)[0]
    assert "-rs" in command.split()
    ci = (REPO / ".ci" / "run").read_text()
    assert all("-rs" in line.split() for line in ci.splitlines() if "pytest" in line and not line.startswith("#"))
