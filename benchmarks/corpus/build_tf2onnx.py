#!/usr/bin/env python3
"""A small Keras model exported by tf2onnx twice: with its batch fixed at 1 in the input signature
and with a None batch, for the fixed-batch check (issue 42) on an exporter other than torch's.
Random weights, nothing downloaded. Needs tensorflow-cpu and tf2onnx (a venv of their own).

    python benchmarks/corpus/build_tf2onnx.py OUT_DIR     # writes tf2onnx-keras-{fixed,dynamic}.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

import tensorflow as tf
import tf2onnx


def build() -> tf.keras.Model:
    """x [batch, 16, 32] -> Dense 64 -> Reshape to 16 x 4 heads x 16 -> heads first -> Reshape to
    4 x 256 -> Flatten -> Dense 10: two Reshapes whose shapes tf2onnx writes as constants."""
    x = tf.keras.Input((16, 32))
    h = tf.keras.layers.Dense(64)(x)
    h = tf.keras.layers.Reshape((16, 4, 16))(h)
    h = tf.keras.layers.Permute((2, 1, 3))(h)
    h = tf.keras.layers.Reshape((4, 256))(h)
    y = tf.keras.layers.Dense(10)(tf.keras.layers.Flatten()(h))
    return tf.keras.Model(x, y)


def main(out: Path) -> None:
    model = build()
    for name, batch in (("fixed", 1), ("dynamic", None)):
        signature = (tf.TensorSpec((batch, 16, 32), tf.float32, name="x"),)
        tf2onnx.convert.from_keras(model, input_signature=signature, opset=17,
                                   output_path=str(out / f"tf2onnx-keras-{name}.onnx"))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
