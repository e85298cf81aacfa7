"""The target file's field table (roofline/target_schema.py): it covers Target, and the README shows it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from onnxroof.roofline.target_schema import FIELDS, field_of, field_table_markdown, section_header
from onnxroof.roofline.targets import Target

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_target_attribute_but_its_path_has_one_field_row():
    filled = [attribute for f in FIELDS for attribute in (f.attribute, *f.also)]
    assert len(filled) == len(set(filled))
    assert set(filled) == {f.name for f in dataclasses.fields(Target)} - {"path"}


def test_the_required_fields_are_the_name_the_description_a_peak_and_the_dram_bandwidth():
    assert [f.path for f in FIELDS if f.required] == [
        "name",
        "description",
        "peak_ops_per_s.<dtype>",
        "dram.bandwidth_bytes_per_s",
    ]


def test_a_one_figure_field_is_written_under_its_path():
    assert section_header("node_overhead_s") == "[node_overhead_s]"
    assert section_header("onchip_bytes") == "[onchip.size_bytes]"
    assert field_of("fusion_source").path == "[fusion]"


def test_the_readme_table_is_the_schema_s():
    text = README.read_text(encoding="utf-8")
    start = text.index("<!-- target-fields")
    start = text.index("\n", start) + 1
    assert text[start : text.index("<!-- /target-fields -->")] == field_table_markdown()
