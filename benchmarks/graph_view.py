"""How long the report's graph view takes on a 10,000-node model: its share of `onnxroof report`,
its bytes in the page, and the time headless Chromium takes to open the page and draw the folded
graph (then to open a module and go back).

    python benchmarks/graph_view.py            # 10,000 nodes
    python benchmarks/graph_view.py 30000

Two models: the MatMul/Add/Relu chain of benchmarks/chain.py (no scoped names: folded by
structure) and a pre-norm encoder whose node names carry modules (/encoder/layer.N/...: folded by
the module tree, its alike layers one box). Needs playwright and a Chromium (`chromium` on PATH or
ONNXROOF_CHROMIUM); the page is written to a temporary directory and removed.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from chain import chain_model  # noqa: E402

import onnxroof  # noqa: E402
from onnxroof.report.graph.data import page_data  # noqa: E402
from onnxroof.report.html import model_page  # noqa: E402
from onnxroof.report.html.pages import render_html  # noqa: E402


def scoped_encoder(nodes: int):
    """tests/models.py's transformer_like (31 nodes a layer) with module-scoped names."""
    from models import transformer_like

    model = transformer_like(layers=max(1, nodes // 31), seq=128, dim=256, heads=4, ffn=1024)
    for node in model.graph.node:
        match = re.match(r"layer(\d+)\.(.*)", node.name)
        if match:
            node.name = f"/encoder/layer.{match.group(1)}/" + match.group(2).replace(".", "/")
    return model


def browser_times(path: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("ONNXROOF_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("#gv-content .gb")
        opened = time.perf_counter() - start
        load = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        boxes = page.locator("#gv-content .gb").count()
        module = page.locator("#gv-content .gb-module").first
        drill = back = float("nan")
        if module.count():
            start = time.perf_counter()
            module.click()
            page.wait_for_selector("#gv-crumbs .gv-crumb")
            drill = time.perf_counter() - start
            start = time.perf_counter()
            page.click("#gv-crumbs .gv-crumb")
            page.wait_for_selector("#gv-crumbs .gv-crumb", state="detached")
            back = time.perf_counter() - start
        browser.close()
    return {"open_s": opened, "load_event_ms": load, "boxes": boxes, "open_module_s": drill, "back_s": back}


def measure(name: str, model) -> None:
    analysis = onnxroof.analyze(model, targets=["h100-sxm"])
    review = onnxroof.review(analysis)  # the findings once, so the timings below are the page's alone
    start = time.perf_counter()
    data = page_data(analysis)
    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    html = render_html(analysis, review=review)
    report_s = time.perf_counter() - start
    keep = model_page.graph_context
    model_page.graph_context = lambda analysis: None
    try:
        without = render_html(analysis, review=review)
    finally:
        model_page.graph_context = keep
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(html, encoding="utf-8")
        shown = browser_times(path)
    print(f"| {name} | {len(analysis.nodes):,} | {len(data['views'])} | {graph_s:.2f} | {report_s:.2f} "
          f"| {len(html) / 2**20:.2f} MiB | {(len(html) - len(without)) / len(analysis.nodes):.0f} "
          f"| {shown['boxes']} | {shown['open_s']:.2f} | {shown['open_module_s']:.2f} | {shown['back_s']:.2f} |")


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    gc.disable()  # as the command line runs: with the collector on, each collection rescans the whole analysis
    print("| model | nodes | views | graph layout s | report s | page | graph bytes a node | boxes drawn "
          "| page open + graph drawn s | open a module s | back s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    measure("MatMul/Add/Relu chain (no scopes)", chain_model(nodes))
    measure("encoder, /encoder/layer.N/... names", scoped_encoder(nodes))


if __name__ == "__main__":
    main()
