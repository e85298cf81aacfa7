"""`onnxroof export` read back from the real viewers, in headless Chromium driven by Playwright: Netron
(the `netron` package serves its web app) shows the attachment's figures in a node's sidebar, and Model
Explorer (`ai-edge-model-explorer` with the `model-explorer-onnx` adapter, its server started as a
child process) shows the node data in its "Node data" table. Every request that leaves the local
server is refused (Netron's analytics, Model Explorer's web fonts). The figures are report_models'
hand-worked ones: the MatMul 32 MACs, 176 ns of 240 (73.3%), DRAM-bound.

``ONNXROOF_UPDATE_SCREENSHOTS=1`` also writes docs/images/export-netron.png and
docs/images/export-model-explorer.png (shrunk with pngquant, or Pillow, when installed).
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import onnx
import pytest
from models import transformer_block
from report_models import hand_target, matmul_relu

from onnxroof.cli.app import main

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser tests need playwright (pip install playwright)"
)

# as tests/report/test_browser.py finds it: $ONNXROOF_CHROMIUM, else the system's
CHROMIUM = next(
    filter(
        None,
        (os.environ.get("ONNXROOF_CHROMIUM"), *map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))),
    ),
    None,
)
# root in a container: no sandbox; nothing that phones home. The GPU stays on (SwiftShader, in
# software): Model Explorer draws with WebGL and never finishes without it.
FLAGS = [
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
UPDATE = os.environ.get("ONNXROOF_UPDATE_SCREENSHOTS") == "1"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _exported(directory: Path, to: str, unnamed_relu: bool = False) -> Path:
    """The model, exported to ``to`` on the hand target beside it; its Relu without a name if asked."""
    model = matmul_relu()
    if unnamed_relu:
        model.graph.node[1].name = ""
    path = directory / "matmul_relu.onnx"
    onnx.save(model, str(path))
    assert main(["export", str(path), "--to", to, "--target", hand_target(directory), "-q"]) == 0
    return path


def _local_only(context, base: str) -> None:
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())


def _screenshot(page, name: str) -> None:
    if not UPDATE:
        return
    IMAGES.mkdir(exist_ok=True)
    path = IMAGES / name
    page.screenshot(path=str(path))
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--skip-if-larger", "--ext", ".png", "16", str(path)], check=False)
        return
    try:  # else Pillow's palette, when it is installed: a quarter of the size
        from PIL import Image
    except ImportError:
        return
    Image.open(path).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def test_netron_shows_the_attachment_on_the_node(browser, tmp_path):
    netron = pytest.importorskip("netron", reason="the Netron test needs netron (pip install netron)")
    exported = _exported(tmp_path, "netron", unnamed_relu=True)
    # served without a model: Netron opens an attachment only from its file dialog, which it does
    # not set up when it starts on a served model
    address = netron.start(None, browse=False, address=("127.0.0.1", 0))
    base = f"http://{address[0]}:{address[1]}/"
    context = browser.new_context(viewport={"width": 1200, "height": 720})
    try:
        # the consent cookie set, so no banner covers the page (and the analytics are refused anyway)
        context.add_cookies([{"name": "consent", "value": str(int(time.time() * 1000)), "url": base}])
        _local_only(context, base)
        page = context.new_page()
        page.goto(base)
        page.locator("#open-file-button").wait_for(timeout=30000)
        page.set_input_files("#open-file-dialog", str(exported))
        page.locator("#node-name-matmul").wait_for(timeout=30000)
        page.set_input_files("#open-file-dialog", str(exported.with_suffix(".onnxroof.json")))  # after the model
        page.locator("#node-name-matmul").click()

        def row(name: str) -> str:
            item = page.locator(".sidebar-item", has=page.locator(f'input[title="{name}"]'))
            return item.locator(".sidebar-item-value-list").inner_text(timeout=10000).strip()

        assert (row("MACs"), row("FLOPs"), row("bytes")) == ("32", "64", "176")
        assert (row("hand: time"), row("hand: share"), row("hand: bound")) == ("176 ns", "73.3%", "DRAM")
        _screenshot(page, "export-netron.png")
        # the Relu has no name, which Netron finds nodes by: its figures are on its output, z (the
        # edge from it to the graph's output; a click on the edge opens the value's sidebar)
        edge = page.locator("#edge-z").bounding_box()
        page.mouse.click(edge["x"] + edge["width"] / 2, edge["y"] + edge["height"] / 2)
        assert (row("FLOPs"), row("bytes"), row("hand: time"), row("hand: share")) == ("8", "64", "64 ns", "26.7%")
        # the model's items: the totals (64 + 8 FLOPs) and the target's latency, in Model Properties
        page.locator("#sidebar-model-button").click()
        assert (row("MACs"), row("FLOPs"), row("parameters")) == ("32", "72", "32")
        assert row("hand: latency").startswith("240 ns") and row("hand: verdict")
    finally:
        context.close()
        netron.stop(address)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_url(server: subprocess.Popen, seconds: float) -> str:
    """The page's address, as the server prints it once it answers."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line.startswith("http://"):
            return line.strip()
    pytest.fail(f"Model Explorer's server printed no address in {seconds:.0f} s")


@contextlib.contextmanager
def _model_explorer(browser, model: Path, data: list[Path]):
    """Model Explorer's page on ``model`` with the node data files ``data``, its server a child process."""
    pytest.importorskip("model_explorer", reason="the Model Explorer test needs ai-edge-model-explorer")
    pytest.importorskip("model_explorer_onnx", reason="the Model Explorer test needs model-explorer-onnx")
    command = shutil.which("model-explorer")
    if command is None:
        pytest.skip("no model-explorer command on PATH")
    port = _free_port()
    server = subprocess.Popen(
        [
            command,
            str(model),
            "--extensions=model_explorer_onnx",
            f"--node_data_paths={','.join(map(str, data))}",
            "--no_open_in_browser",
            "--host=127.0.0.1",
            f"--port={port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        url = _server_url(server, 60)
        _local_only(context, f"http://127.0.0.1:{port}/")
        page = context.new_page()
        page.goto(url)
        yield page
    finally:
        context.close()
        server.terminate()
        server.wait(timeout=30)


def _cells(page, node: str) -> list[str]:
    """A row of Model Explorer's tables, found by its node's label (exactly): a column per file."""
    row = page.locator("tr", has=page.locator(f"td:text-is('{node}')")).last
    return [text.strip() for text in row.locator("td").all_inner_texts()]


def test_model_explorer_shows_the_node_data(browser, tmp_path):
    exported = _exported(tmp_path, "model-explorer")
    data = [exported.with_name(f"matmul_relu.hand.{metric}.json") for metric in ("share", "bound")]
    with _model_explorer(browser, exported, data) as page:
        page.locator("td:text-is('73.3333')").first.wait_for(timeout=60000)
        assert {"73.3333", "DRAM"} <= set(_cells(page, "MatMul"))  # 100 x 176/240, and the MatMul's bound
        assert {"26.6667", "DRAM"} <= set(_cells(page, "Relu"))  # 100 x 64/240


def test_model_explorer_folds_the_scoped_layers(browser, tmp_path):
    """A model whose node names are scoped (/layers.0/..., /layers.1/..., /lm_head/...): each scope is a
    group node, and the graph's group lists each child's sum of shares and its count per bound (the
    README's picture)."""
    path = tmp_path / "block.onnx"
    onnx.save(transformer_block(), str(path))
    argv = ["export", str(path), "--to", "model-explorer", "--target", "coral-edge-tpu", "--dim", "seq=64", "-q"]
    assert main(argv) == 0
    data = [tmp_path / f"block.coral-edge-tpu.{metric}.json" for metric in ("share", "bound")]
    with _model_explorer(browser, path, data) as page:
        page.locator("td:text-is('Softmax')").first.wait_for(timeout=60000)
        page.get_by_text("unfold_more_double", exact=True).click()  # expand every layer
        page.wait_for_timeout(1500)
        page.mouse.click(415, 404)  # the graph's own group, which the expanded layers fill: select it
        page.locator("td:text-is('lm_head')").first.wait_for(timeout=30000)
        sums = [float(_cells(page, layer)[2]) for layer in ("layers.0", "layers.1", "lm_head")]
        # every node's share sums to the latency's 100%, and these three groups hold every node that runs
        assert all(share > 0 for share in sums) and abs(sum(sums) - 100) < 0.2
        _screenshot(page, "export-model-explorer.png")
