"""The layers of docs/architecture.md hold: every import points down, no cycle, nothing imports
the command line. The contract is import-linter's (pyproject.toml, [tool.importlinter]); these
tests run it, and show it fails on a wrong import."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
from importlinter.cli import lint_imports

REPO = Path(__file__).resolve().parents[2]


def import_graph() -> nx.DiGraph:
    """The package's modules and their direct imports (type-only imports included)."""
    imports = grimp.build_graph("onnxroof", include_external_packages=False)
    graph = nx.DiGraph()
    for module in imports.modules:
        graph.add_node(module)
        graph.add_edges_from((module, imported) for imported in imports.find_modules_directly_imported_by(module))
    return graph


def test_the_layer_contracts_are_kept():
    assert lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_import_cycle_anywhere_in_the_package():
    graph = import_graph()
    assert len(graph) > 40  # the whole package was read, not an empty graph
    assert list(nx.simple_cycles(graph)) == []


def test_no_module_imports_the_command_line():
    graph = import_graph()
    command_line = {module for module in graph if module == "onnxroof.cli" or module.startswith("onnxroof.cli.")}
    assert {importer for module in command_line for importer in graph.predecessors(module)} <= command_line


def test_a_stage_importing_the_orchestrator_breaks_the_contract(tmp_path):
    # a temporary copy of the package in which the roofline stage reaches up into pipeline.py
    shutil.copytree(REPO / "onnxroof", tmp_path / "onnxroof", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    roofline = tmp_path / "onnxroof" / "roofline" / "placement.py"
    roofline.write_text(roofline.read_text() + "\nfrom ..pipeline import analyze  # a wrong, upward import\n")
    environment = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))",
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "onnxroof.roofline.placement -> onnxroof.pipeline" in run.stdout
    assert "BROKEN" in run.stdout


def test_the_layers_are_packages_at_most_twelve_and_the_top_holds_at_most_six_modules():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    assert len(contract["layers"]) <= 12
    packages = {p.name for p in (REPO / "onnxroof").iterdir() if (p / "__init__.py").is_file()}
    named = {name.strip().removeprefix("onnxroof.") for layer in contract["layers"] for name in layer.split("|")}
    assert packages <= named  # every package has its layer
    top_modules = sorted(p.name for p in (REPO / "onnxroof").glob("*.py"))
    assert len(top_modules) <= 6, top_modules


def test_no_module_is_over_600_lines():
    longest = {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in (REPO / "onnxroof").rglob("*.py")}
    assert {path: lines for path, lines in longest.items() if lines > 600} == {}


# ---------------------------------------------------------------------------------------------
# docs/architecture.md's layout block names every module of the package, and only those


def layout_entries() -> dict[str, str]:
    """The layout block's entries: a top module (``pipeline.py``) or a package (``cost/``) and its
    text, continuation lines joined."""
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text.split("```\nonnxroof/\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        first = re.match(r"^  (\S+)\s+(.*)$", line)
        if not line.strip() or line.strip().startswith("──"):  # a blank line or the layers' separator
            current = None
        elif first and not line.startswith("   "):
            current = first.group(1)
            entries[current] = first.group(2)
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def _items(text: str) -> list[str]:
    """``text`` split at the commas and semicolons outside parentheses."""
    items, depth, start = [], 0, 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ",;" and depth == 0:
            items.append(text[start:position].strip())
            start = position + 1
    return [item for item in [*items, text[start:].strip()] if item]


def _parenthesised(text: str) -> str:
    """What the parentheses opening ``text`` hold."""
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[1:position]
    raise AssertionError(f"unbalanced parentheses in {text!r}")


def named_modules(text: str, package: str) -> set[str]:
    """The modules a package's entry names: each item (between commas or semicolons outside
    parentheses) starts with a module's name, what follows is its gloss; a subpackage's name ends
    with ``/`` and the parentheses after it name its modules the same way."""
    named = set()
    for item in _items(text):
        name = re.match(r"(\w+)(/)?\s*", item)
        assert name, f"{package}: {item!r} does not start with a module's name"
        if name.group(2):
            rest = item[name.end() :]
            assert rest.startswith("("), f"{package}{name.group(1)}/ lists no modules in parentheses"
            named |= named_modules(_parenthesised(rest), f"{package}{name.group(1)}/")
        else:
            named.add(package + name.group(1))
    return named


def layout_modules() -> set[str]:
    modules = set()
    for entry, text in layout_entries().items():
        modules |= {entry.removesuffix(".py")} if entry.endswith(".py") else named_modules(text, entry)
    return modules


def package_modules() -> set[str]:
    """Every module of the package as a path below onnxroof/ without ``.py`` (``cost/graph``); a
    package's ``__init__`` only at the top, where it is the API."""
    root = REPO / "onnxroof"
    return {
        str(p.relative_to(root).with_suffix(""))
        for p in root.rglob("*.py")
        if p.name != "__init__.py" or p.parent == root
    }


def test_the_layout_block_names_every_module_of_the_package():
    assert package_modules() - layout_modules() == set()


def test_every_module_the_layout_block_names_exists():
    assert layout_modules() - package_modules() == set()


def test_the_layout_block_is_read_item_by_item():
    # the reading the two tests above rest on, on a made-up entry
    text = "a (one, two), b/ (c (three; four), d): its modules; e"
    assert named_modules(text, "x/") == {"x/a", "x/b/c", "x/b/d", "x/e"}
    assert {"pipeline", "__init__", "cost/graph", "report/html/charts", "cli/commands/summary"} <= layout_modules()
