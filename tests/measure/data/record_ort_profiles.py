"""Re-record the onnxruntime profiles that tests/measure/test_profiling.py reads (not a test).

    python tests/measure/data/record_ort_profiles.py

Runs the MiniGoogLeNet example with onnxruntime's profiler at two optimization levels (1
warm-up run + 3 measured runs each) and keeps only what onnxroof reads: the ``model_run``
session events and the ``<node>_kernel_time`` node events, with ``args`` cut down to
``op_name`` and ``provider``, and the structure of the graph onnxruntime ran (``optimized``:
each node's inputs, outputs and op; initializer and input names). The times are whatever this
machine measured; the tests check the mapping and the arithmetic, never the values.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEVELS = {"all": "ORT_ENABLE_ALL", "basic": "ORT_ENABLE_BASIC"}
RUNS = 4  # the first is the warm-up


def trim(events: list[dict]) -> list[dict]:
    kept = []
    for event in events:
        if event.get("cat") == "Session" and event.get("name") == "model_run":
            kept.append({k: event[k] for k in ("cat", "name", "ph", "pid", "tid", "ts", "dur")})
        elif event.get("cat") == "Node" and str(event.get("name", "")).endswith("_kernel_time"):
            args = event.get("args", {})
            kept.append(
                {
                    **{k: event[k] for k in ("cat", "name", "ph", "pid", "tid", "ts", "dur")},
                    "args": {"op_name": args.get("op_name", ""), "provider": args.get("provider", "")},
                }
            )
    return kept


def main() -> int:
    import numpy as np
    import onnx
    import onnxruntime as ort

    from onnxroof.core.examples import build_example
    from onnxroof.measure.ort_events import OptimizedGraph

    model = build_example("minigooglenet").SerializeToString()
    feeds = {"input": np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    for label, level in LEVELS.items():
        with tempfile.TemporaryDirectory() as directory:
            options = ort.SessionOptions()
            options.enable_profiling = True
            options.profile_file_prefix = str(Path(directory) / "ort")
            options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
            options.log_severity_level = 3
            options.optimized_model_filepath = str(Path(directory) / "optimized.onnx")
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            for _ in range(RUNS):
                session.run(None, feeds)
            events = json.loads(Path(session.end_profiling()).read_text())
            optimized = OptimizedGraph.from_model(onnx.load(options.optimized_model_filepath, load_external_data=False))
        out = HERE / f"minigooglenet-ort-{label}.json"
        out.write_text(
            json.dumps(
                {
                    "onnxruntime": ort.__version__,
                    "optimization": label,
                    "warmup": 1,
                    "optimized": optimized.to_dict(),
                    "traceEvents": trim(events),
                },
                separators=(",", ":"),
            )
            + "\n"
        )
        print(f"wrote {out} ({out.stat().st_size:,} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
