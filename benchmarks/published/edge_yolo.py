"""Weight-free ONNX models of ultralytics' YOLOv8 and YOLO11 detectors (edge_models.py's other half).

Written from the architecture files ultralytics/cfg/models/v8/yolov8.yaml and 11/yolo11.yaml and the
blocks of ultralytics/nn/modules (Conv = Conv2d + BatchNorm + SiLU, C2f, C3k2, C3k, SPPF, C2PSA,
Detect), at the scales n/s/m/l/x (depth, width, max channels), as ``yolo export format=onnx`` writes
them at opset 17: BatchNorm folded into the Conv bias, SiLU as x * Sigmoid(x), the Detect head with
its DFL (a softmax over 16 bins and a fixed 1x1 conv) and the boxes decoded against the anchor grid.
"""

from __future__ import annotations

import math

import onnx

from published.models import FLOAT, Graph

V8_SCALES = {
    "n": (0.33, 0.25, 1024),
    "s": (0.33, 0.50, 1024),
    "m": (0.67, 0.75, 768),
    "l": (1.00, 1.00, 512),
    "x": (1.00, 1.25, 512),
}
V11_SCALES = {
    "n": (0.50, 0.25, 1024),
    "s": (0.50, 0.50, 1024),
    "m": (0.50, 1.00, 512),
    "l": (1.00, 1.00, 512),
    "x": (1.00, 1.50, 512),
}
REG_MAX, CLASSES = 16, 80


class _Yolo:
    """A YOLO graph under construction at one scale: the channel and repeat rounding of parse_model."""

    def __init__(self, name: str, scale: tuple[float, float, int]):
        self.g = Graph(name)
        self.depth, self.width, self.max_channels = scale

    def ch(self, c: int) -> int:
        return math.ceil(min(c, self.max_channels) * self.width / 8) * 8

    def n(self, repeats: int) -> int:
        return max(round(repeats * self.depth), 1) if repeats > 1 else repeats

    def conv(
        self, x: str, cin: int, cout: int, k: int = 1, s: int = 1, group: int = 1, act: bool = True, p: str = ""
    ) -> str:
        y = self.g.conv(x, cin, cout, k, s, group, prefix=p)
        return self.g.op("Mul", [y, self.g.op("Sigmoid", [y])]) if act else y

    def bottleneck(self, x: str, c: int, shortcut: bool, e: float, p: str) -> str:
        hidden = int(c * e)
        y = self.conv(self.conv(x, c, hidden, 3, p=f"{p}.cv1"), hidden, c, 3, p=f"{p}.cv2")
        return self.g.op("Add", [x, y]) if shortcut else y

    def c3k(self, x: str, cin: int, cout: int, shortcut: bool, p: str, n: int = 2) -> str:
        hidden = int(cout * 0.5)
        a = self.conv(x, cin, hidden, p=f"{p}.cv1")
        for i in range(n):
            a = self.bottleneck(a, hidden, shortcut, 1.0, f"{p}.m{i}")
        return self.conv(
            self.g.op("Concat", [a, self.conv(x, cin, hidden, p=f"{p}.cv2")], axis=1), 2 * hidden, cout, p=f"{p}.cv3"
        )

    def c2f(
        self, x: str, cin: int, cout: int, n: int, shortcut: bool, p: str, c3k: bool | None = None, e: float = 0.5
    ) -> str:
        """C2f (YOLOv8: bottlenecks at e=1.0) or, with ``c3k`` set, C3k2 (YOLO11: C3k blocks, or
        bottlenecks at e=0.5)."""
        c = int(cout * e)
        y = self.conv(x, cin, 2 * c, p=f"{p}.cv1")
        halves = [f"{p}.split0", f"{p}.split1"]
        self.g.nodes.append(
            onnx.helper.make_node("Split", [y, self.g.ints([c, c])], halves, axis=1, name=self.g.fresh("Split"))
        )
        parts, last = halves[:], halves[1]
        for i in range(n):
            if c3k is None:
                last = self.bottleneck(last, c, shortcut, 1.0, f"{p}.m{i}")
            elif c3k:
                last = self.c3k(last, c, c, shortcut, f"{p}.m{i}")
            else:
                last = self.bottleneck(last, c, shortcut, 0.5, f"{p}.m{i}")
            parts.append(last)
        return self.conv(self.g.op("Concat", parts, axis=1), (2 + n) * c, cout, p=f"{p}.cv2")

    def sppf(self, x: str, cin: int, cout: int, p: str) -> str:
        hidden = cin // 2
        pools = [self.conv(x, cin, hidden, p=f"{p}.cv1")]
        for _ in range(3):
            pools.append(self.g.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4))
        return self.conv(self.g.op("Concat", pools, axis=1), 4 * hidden, cout, p=f"{p}.cv2")

    def upsample(self, x: str) -> str:
        return self.g.op("Resize", [x, "", self.g.scalars([1.0, 1.0, 2.0, 2.0])], mode="nearest")

    def c2psa(self, x: str, c1: int, n: int, p: str, batch: int, side: int) -> str:
        """C2PSA: half the channels through ``n`` PSA blocks (attention with c/64 heads, key 1/2 of a
        head, a 3x3 depthwise positional conv on v, a 2x FFN)."""
        c = int(c1 * 0.5)
        y = self.conv(x, c1, 2 * c, p=f"{p}.cv1")
        a, b = f"{p}.a", f"{p}.b"
        self.g.nodes.append(
            onnx.helper.make_node("Split", [y, self.g.ints([c, c])], [a, b], axis=1, name=self.g.fresh("Split"))
        )
        heads = max(c // 64, 1)
        head_dim, key_dim = c // heads, int(c // heads * 0.5)
        tokens = side * side
        for i in range(n):
            q = f"{p}.m{i}"
            qkv = self.conv(b, c, c + 2 * key_dim * heads, act=False, p=f"{q}.qkv")
            qkv = self.g.op("Reshape", [qkv, self.g.ints([batch, heads, 2 * key_dim + head_dim, tokens])])
            qq, kk, vv = f"{q}.q", f"{q}.k", f"{q}.v"
            self.g.nodes.append(
                onnx.helper.make_node(
                    "Split",
                    [qkv, self.g.ints([key_dim, key_dim, head_dim])],
                    [qq, kk, vv],
                    axis=2,
                    name=self.g.fresh("Split"),
                )
            )
            s = self.g.op("MatMul", [self.g.op("Transpose", [qq], perm=[0, 1, 3, 2]), kk])
            attn = self.g.op("Softmax", [self.g.op("Mul", [s, self.g.scalar(key_dim**-0.5)])], axis=-1)
            o = self.g.op("MatMul", [vv, self.g.op("Transpose", [attn], perm=[0, 1, 3, 2])])
            o = self.g.op("Reshape", [o, self.g.ints([batch, c, side, side])])
            v_map = self.g.op("Reshape", [vv, self.g.ints([batch, c, side, side])])
            o = self.g.op("Add", [o, self.conv(v_map, c, c, 3, group=c, act=False, p=f"{q}.pe")])
            b = self.g.op("Add", [b, self.conv(o, c, c, act=False, p=f"{q}.proj")])
            f = self.conv(self.conv(b, c, 2 * c, p=f"{q}.ffn0"), 2 * c, c, act=False, p=f"{q}.ffn1")
            b = self.g.op("Add", [b, f])
        return self.conv(self.g.op("Concat", [a, b], axis=1), 2 * c, c1, p=f"{p}.cv2")

    def detect(
        self,
        maps: list[tuple[str, int, int]],
        batch: int,
        v11: bool,
        hailo: bool = False,
        keypoints: int = 0,
        classes: int = CLASSES,
    ) -> None:
        """Detect: per level a box branch (two 3x3 convs, 4 x 16 DFL bins) and a class branch (two 3x3
        convs in v8; depthwise 3x3 + 1x1 pairs in v11), then DFL and the decoding into boxes.

        ``keypoints``: ultralytics' Pose head (ultralytics/nn/modules/head.py, Pose): per level a third
        branch cv4 of two 3x3 convs to max(c0 / 4, keypoints) channels and a 1x1 conv to ``keypoints``
        values (17 x 3 for COCO), concatenated over the levels as a second output; the keypoints'
        decoding (a few elementwise ops over 51 x 8,400 values at 640) is left out.

        ``hailo``: cut where the Hailo model zoo's HEFs end, at the six last convs (cv2.i.2, the box
        bins, and cv3.i.2, the classes, with a sigmoid on the classes), each an output: the zoo's
        yolov11{n,s,m,l,x}.yaml parse to ``/model.23/cv2.0/cv2.0.2/Conv`` ... ``cv3.2.2/Conv``, its
        yolov8*.alls give the class convs a sigmoid output activation and run ``nms_postprocess(...,
        meta_arch=yolov8, engine=cpu)``, whose bbox decoders read those convs (postprocess_config/
        yolov8m_nms_config.json: reg_layer conv57, cls_layer conv58, ...): the DFL softmax, the box
        decoding and the NMS run on the host (hailo-ai/hailo_model_zoo, hailo_model_zoo/cfg at c83fc030e8)."""
        g, c0 = self.g, maps[0][1]
        c2, c3 = max(16, c0 // 4, REG_MAX * 4), max(c0, min(classes, 100))
        outs, anchors = [], 0
        for i, (x, c, side) in enumerate(maps):
            box = self.conv(self.conv(x, c, c2, 3, p=f"det.box{i}.0"), c2, c2, 3, p=f"det.box{i}.1")
            box = g.conv(box, c2, 4 * REG_MAX, 1, prefix=f"det.box{i}.2")
            if v11:
                cls = self.conv(self.conv(x, c, c, 3, group=c, p=f"det.cls{i}.0dw"), c, c3, p=f"det.cls{i}.0pw")
                cls = self.conv(self.conv(cls, c3, c3, 3, group=c3, p=f"det.cls{i}.1dw"), c3, c3, p=f"det.cls{i}.1pw")
            else:
                cls = self.conv(self.conv(x, c, c3, 3, p=f"det.cls{i}.0"), c3, c3, 3, p=f"det.cls{i}.1")
            cls = g.conv(cls, c3, classes, 1, prefix=f"det.cls{i}.2")
            if hailo:
                g.output(box, f"box{i}")
                g.output(g.op("Sigmoid", [cls]), f"cls{i}")
                continue
            y = g.op("Concat", [box, cls], axis=1)
            outs.append(g.op("Reshape", [y, g.ints([batch, 4 * REG_MAX + classes, side * side])]))
            anchors += side * side
        if hailo:
            return
        if keypoints:
            c4, kpts = max(c0 // 4, keypoints), []
            for i, (x, c, side) in enumerate(maps):
                k = self.conv(self.conv(x, c, c4, 3, p=f"pose.kpt{i}.0"), c4, c4, 3, p=f"pose.kpt{i}.1")
                k = g.conv(k, c4, keypoints, 1, prefix=f"pose.kpt{i}.2")
                kpts.append(g.op("Reshape", [k, g.ints([batch, keypoints, side * side])]))
            g.output(g.op("Concat", kpts, axis=2), "keypoints")
        y = g.op("Concat", outs, axis=2)
        box, cls = "det.box", "det.cls"
        g.nodes.append(
            onnx.helper.make_node(
                "Split", [y, g.ints([4 * REG_MAX, classes])], [box, cls], axis=1, name=g.fresh("Split")
            )
        )
        dfl = g.op(
            "Softmax",
            [g.op("Transpose", [g.op("Reshape", [box, g.ints([batch, 4, REG_MAX, anchors])])], perm=[0, 2, 1, 3])],
            axis=1,
        )
        dist = g.op("Conv", [dfl, g.weight("dfl.weight", [1, REG_MAX, 1, 1])], kernel_shape=[1, 1])
        dist = g.op("Reshape", [dist, g.ints([batch, 4, anchors])])
        lt, rb = "det.lt", "det.rb"
        g.nodes.append(onnx.helper.make_node("Split", [dist, g.ints([2, 2])], [lt, rb], axis=1, name=g.fresh("Split")))
        points, strides = g.weight("anchor_points", [1, 2, anchors]), g.weight("strides", [1, 1, anchors])
        x1y1, x2y2 = g.op("Sub", [points, lt]), g.op("Add", [points, rb])
        centre = g.op("Div", [g.op("Add", [x1y1, x2y2]), g.scalar(2.0)])
        boxes = g.op("Mul", [g.op("Concat", [centre, g.op("Sub", [x2y2, x1y1])], axis=1), strides])
        g.output(g.op("Concat", [boxes, g.op("Sigmoid", [cls])], axis=1), "output0")


def yolov8(
    scale: str = "n", batch: int = 1, resolution: int = 640, hailo: bool = False, pose: bool = False
) -> onnx.ModelProto:
    """YOLOv8 n/s/m/l/x (ultralytics, yolov8.yaml): C2f backbone and PAN neck, SPPF, an anchor-free
    decoupled Detect head with DFL, 80 classes. ``hailo``: ending where the Hailo zoo's HEF does
    (``_Yolo.detect``); ``pose``: yolov8-pose.yaml's Pose head (one class, 17 keypoints x 3)."""
    y = _Yolo(f"yolov8{scale}{'-pose' if pose else ''}_{resolution}", V8_SCALES[scale])
    ch = y.ch
    x = y.g.input("images", FLOAT, [batch, 3, resolution, resolution])
    x = y.conv(y.conv(x, 3, ch(64), 3, 2, p="m0"), ch(64), ch(128), 3, 2, p="m1")
    x = y.c2f(x, ch(128), ch(128), y.n(3), True, "m2")
    p3 = y.c2f(y.conv(x, ch(128), ch(256), 3, 2, p="m3"), ch(256), ch(256), y.n(6), True, "m4")
    p4 = y.c2f(y.conv(p3, ch(256), ch(512), 3, 2, p="m5"), ch(512), ch(512), y.n(6), True, "m6")
    x = y.c2f(y.conv(p4, ch(512), ch(1024), 3, 2, p="m7"), ch(1024), ch(1024), y.n(3), True, "m8")
    p5 = y.sppf(x, ch(1024), ch(1024), "m9")
    h4 = y.c2f(y.g.op("Concat", [y.upsample(p5), p4], axis=1), ch(1024) + ch(512), ch(512), y.n(3), False, "m12")
    n3 = y.c2f(y.g.op("Concat", [y.upsample(h4), p3], axis=1), ch(512) + ch(256), ch(256), y.n(3), False, "m15")
    n4 = y.c2f(
        y.g.op("Concat", [y.conv(n3, ch(256), ch(256), 3, 2, p="m16"), h4], axis=1),
        ch(256) + ch(512),
        ch(512),
        y.n(3),
        False,
        "m18",
    )
    n5 = y.c2f(
        y.g.op("Concat", [y.conv(n4, ch(512), ch(512), 3, 2, p="m19"), p5], axis=1),
        ch(512) + ch(1024),
        ch(1024),
        y.n(3),
        False,
        "m21",
    )
    s = resolution // 8
    maps = [(n3, ch(256), s), (n4, ch(512), s // 2), (n5, ch(1024), s // 4)]
    y.detect(maps, batch, v11=False, hailo=hailo, keypoints=17 * 3 if pose else 0, classes=1 if pose else CLASSES)
    return y.g.model()


def yolo11(scale: str = "n", batch: int = 1, resolution: int = 640, hailo: bool = False) -> onnx.ModelProto:
    """YOLO11 n/s/m/l/x (ultralytics, yolo11.yaml): C3k2 blocks (C3k inside at m/l/x and in the
    backbone's last two stages), SPPF, C2PSA attention at stride 32, Detect with depthwise class convs.
    ``hailo``: ending where the Hailo zoo's HEF does (``_Yolo.detect``)."""
    y = _Yolo(f"yolo11{scale}_{resolution}", V11_SCALES[scale])
    ch, c3k_all = y.ch, scale in "mlx"
    x = y.g.input("images", FLOAT, [batch, 3, resolution, resolution])
    x = y.conv(y.conv(x, 3, ch(64), 3, 2, p="m0"), ch(64), ch(128), 3, 2, p="m1")
    x = y.c2f(x, ch(128), ch(256), y.n(2), True, "m2", c3k=c3k_all, e=0.25)
    p3 = y.c2f(y.conv(x, ch(256), ch(256), 3, 2, p="m3"), ch(256), ch(512), y.n(2), True, "m4", c3k=c3k_all, e=0.25)
    p4 = y.c2f(y.conv(p3, ch(512), ch(512), 3, 2, p="m5"), ch(512), ch(512), y.n(2), True, "m6", c3k=True)
    x = y.c2f(y.conv(p4, ch(512), ch(1024), 3, 2, p="m7"), ch(1024), ch(1024), y.n(2), True, "m8", c3k=True)
    side = resolution // 32
    p5 = y.c2psa(y.sppf(x, ch(1024), ch(1024), "m9"), ch(1024), y.n(2), "m10", batch, side)
    h4 = y.c2f(
        y.g.op("Concat", [y.upsample(p5), p4], axis=1), ch(1024) + ch(512), ch(512), y.n(2), True, "m13", c3k=c3k_all
    )
    n3 = y.c2f(
        y.g.op("Concat", [y.upsample(h4), p3], axis=1), ch(512) + ch(512), ch(256), y.n(2), True, "m16", c3k=c3k_all
    )
    n4 = y.c2f(
        y.g.op("Concat", [y.conv(n3, ch(256), ch(256), 3, 2, p="m17"), h4], axis=1),
        ch(256) + ch(512),
        ch(512),
        y.n(2),
        True,
        "m19",
        c3k=c3k_all,
    )
    n5 = y.c2f(
        y.g.op("Concat", [y.conv(n4, ch(512), ch(512), 3, 2, p="m20"), p5], axis=1),
        ch(512) + ch(1024),
        ch(1024),
        y.n(2),
        True,
        "m22",
        c3k=True,
    )
    y.detect([(n3, ch(256), side * 4), (n4, ch(512), side * 2), (n5, ch(1024), side)], batch, v11=True, hailo=hailo)
    return y.g.model()


# ultralytics cfg/models/v9/yolov9{t,s,m}.yaml: (stem convs, the P2 block's channels, the P3/P4/P5 widths,
# the RepCSP depth, whether the P2 block is ELAN1 (plain convs) rather than RepNCSPELAN4); every
# RepNCSPELAN4 there is (c, c, c / 2)
V9_SCALES = {
    "t": ((16, 32), 32, (64, 96, 128), 3, True),
    "s": ((32, 64), 64, (128, 192, 256), 3, True),
    "m": ((32, 64), 128, (240, 360, 480), 1, False),
}


class _Yolo9(_Yolo):
    """YOLOv9's GELAN blocks (ultralytics/nn/modules/block.py), RepConv fused to its one 3x3 conv as exported."""

    def __init__(self, name: str):
        super().__init__(name, (1.0, 1.0, 10_000))  # the v9 yamls give absolute widths, no scales

    def elan(self, x: str, c1: int, c2: int, c3: int, c4: int, n: int | None, p: str) -> str:
        """RepNCSPELAN4 (c1, c2, c3, c4, n): a 1x1 conv split in halves, the second half through two
        RepCSP(n) + 3x3 conv stages, all four concatenated into a 1x1 conv; ``n`` None: ELAN1, the
        stages plain 3x3 convs."""
        y = self.conv(x, c1, c3, p=f"{p}.cv1")
        halves = [f"{p}.split0", f"{p}.split1"]
        self.g.nodes.append(
            onnx.helper.make_node(
                "Split", [y, self.g.ints([c3 // 2, c3 // 2])], halves, axis=1, name=self.g.fresh("Split")
            )
        )
        d, cin = halves[1], c3 // 2
        parts = halves[:]
        for stage in ("cv2", "cv3"):
            if n is not None:  # RepCSP is C3 with RepBottlenecks at e=1.0: the C3k block's layout
                d = self.c3k(d, cin, c4, True, f"{p}.{stage}.0", n=n)
                cin = c4
            d = self.conv(d, cin, c4, 3, p=f"{p}.{stage}.1")
            cin = c4
            parts.append(d)
        return self.conv(self.g.op("Concat", parts, axis=1), c3 + 2 * c4, c2, p=f"{p}.cv4")

    def aconv(self, x: str, c1: int, c2: int, p: str) -> str:
        """AConv: a 2x2 average pool at stride 1, then a 3x3 conv at stride 2."""
        pooled = self.g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[1, 1])
        return self.conv(pooled, c1, c2, 3, 2, p=p)

    def sppelan(self, x: str, c1: int, c2: int, c3: int, p: str) -> str:
        pools = [self.conv(x, c1, c3, p=f"{p}.cv1")]
        for _ in range(3):
            pools.append(self.g.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4))
        return self.conv(self.g.op("Concat", pools, axis=1), 4 * c3, c2, p=f"{p}.cv5")


def yolov9(scale: str = "t", batch: int = 1, resolution: int = 640) -> onnx.ModelProto:
    """YOLOv9 t/s/m as ultralytics builds them (cfg/models/v9/yolov9{t,s,m}.yaml): a GELAN backbone
    (ELAN1 or RepNCSPELAN4, AConv downsampling, SPPELAN), a PAN neck of RepNCSPELAN4 and AConv, and
    YOLOv8's Detect head with DFL, 80 classes."""
    (s0, s1), c2, (c3, c4, c5), n, elan1 = V9_SCALES[scale]
    y = _Yolo9(f"yolov9{scale}_{resolution}")
    x = y.g.input("images", FLOAT, [batch, 3, resolution, resolution])
    x = y.conv(y.conv(x, 3, s0, 3, 2, p="m0"), s0, s1, 3, 2, p="m1")
    x = y.elan(x, s1, c2, c2 if elan1 else c2, c2 // 2, None if elan1 else n, "m2")
    p3 = y.elan(y.aconv(x, c2, c3, "m3"), c3, c3, c3, c3 // 2, n, "m4")
    p4 = y.elan(y.aconv(p3, c3, c4, "m5"), c4, c4, c4, c4 // 2, n, "m6")
    p5 = y.elan(y.aconv(p4, c4, c5, "m7"), c5, c5, c5, c5 // 2, n, "m8")
    p5 = y.sppelan(p5, c5, c5, c5 // 2, "m9")
    h4 = y.elan(y.g.op("Concat", [y.upsample(p5), p4], axis=1), c5 + c4, c4, c4, c4 // 2, n, "m12")
    n3 = y.elan(y.g.op("Concat", [y.upsample(h4), p3], axis=1), c4 + c3, c3, c3, c3 // 2, n, "m15")
    d4 = y.g.op("Concat", [y.aconv(n3, c3, c4 // 2, "m16"), h4], axis=1)
    n4 = y.elan(d4, c4 // 2 + c4, c4, c4, c4 // 2, n, "m18")
    d5 = y.g.op("Concat", [y.aconv(n4, c4, c5 // 2, "m19"), p5], axis=1)
    n5 = y.elan(d5, c5 // 2 + c5, c5, c5, c5 // 2, n, "m21")
    side = resolution // 8
    y.detect([(n3, c3, side), (n4, c4, side // 2), (n5, c5, side // 4)], batch, v11=False)
    return y.g.model()


def _ultralytics(params_m: float, gflops: float, name: str, hailo_ops: float) -> str:
    return (
        f"ultralytics {name} at 640: {params_m} M params, {gflops} GFLOPs (2 x MACs, the backbone and head "
        f"without the decoding); Hailo model zoo: {hailo_ops} G OPS"
    )


def yolo_checks() -> list:
    from published.models import Check

    yx = "Megvii-BaseDetection/YOLOX README: "
    return [
        Check(
            "YOLOX-Nano, 416",
            lambda: yolox("nano", 1, 416),
            0.91e6,
            1.08e9 / 2,
            yx + "0.91 M params, 1.08 GFLOPs (2 x MACs); the built graph counts 15 % fewer MACs, cause not found",
        ),
        Check(
            "YOLOX-Tiny, 416",
            lambda: yolox("tiny", 1, 416),
            5.06e6,
            6.45e9 / 2,
            yx + "5.06 M, 6.45 GFLOPs; Hailo model zoo yolox_tiny: 5.05 M, 6.44 G OPS",
        ),
        Check("YOLOX-S, 640", lambda: yolox("s"), 9.0e6, 26.8e9 / 2, yx + "9.0 M, 26.8 GFLOPs"),
        Check("YOLOX-L, 640", lambda: yolox("l"), 54.2e6, 155.6e9 / 2, yx + "54.2 M, 155.6 GFLOPs"),
        Check("YOLOv8n, 640", lambda: yolov8("n"), 3.2e6, 8.7e9 / 2, _ultralytics(3.2, 8.7, "YOLOv8n", 8.74)),
        Check("YOLOv8s, 640", lambda: yolov8("s"), 11.2e6, 28.6e9 / 2, _ultralytics(11.2, 28.6, "YOLOv8s", 28.6)),
        Check(
            "YOLOv8s-pose, 640",
            lambda: yolov8("s", pose=True),
            11.6e6,
            30.2e9 / 2,
            "ultralytics docs/en/tasks/pose.md: YOLOv8s-pose at 640: 11.6 M params, 30.2 GFLOPs",
        ),
        Check(
            "YOLOv9t, 640",
            lambda: yolov9("t"),
            2128720,
            8.5e9 / 2,
            "ultralytics cfg/models/v9/yolov9t.yaml: 2,128,720 params, 8.5 GFLOPs, counted unfused (RepConv's 1x1 "
            "branch and the BatchNorms: the fused export has 1-3 % fewer, as yolov9s.yaml's 7.32 M / 27.6 against "
            "the docs' 7.2 M / 26.7; the docs' YOLOv9t row, 2.0 M / 7.7, is not this graph's)",
        ),
        Check(
            "YOLOv9s, 640", lambda: yolov9("s"), 7.2e6, 26.7e9 / 2, "ultralytics yolov9.md: YOLOv9s 7.2 M, 26.7 GFLOPs"
        ),
        Check("YOLOv8m, 640", lambda: yolov8("m"), 25.9e6, 78.9e9 / 2, _ultralytics(25.9, 78.9, "YOLOv8m", 78.93)),
        Check("YOLO11n, 640", lambda: yolo11("n"), 2.6e6, 6.5e9 / 2, _ultralytics(2.6, 6.5, "YOLO11n", 6.55)),
        Check("YOLO11s, 640", lambda: yolo11("s"), 9.4e6, 21.5e9 / 2, _ultralytics(9.4, 21.5, "YOLO11s", 21.6)),
        Check("YOLO11m, 640", lambda: yolo11("m"), 20.1e6, 68.0e9 / 2, _ultralytics(20.1, 68.0, "YOLO11m", 68.1)),
        Check("YOLO11x, 640", lambda: yolo11("x"), 56.9e6, 194.9e9 / 2, _ultralytics(56.9, 194.9, "YOLO11x", 195.29)),
    ]


YOLOX_SCALES = {
    "nano": (0.33, 0.25, True),
    "tiny": (0.33, 0.375, False),
    "s": (0.33, 0.50, False),
    "m": (0.67, 0.75, False),
    "l": (1.0, 1.0, False),
    "x": (1.33, 1.25, False),
}


class _YoloX(_Yolo):
    """YOLOX's blocks (Megvii-BaseDetection/YOLOX, yolox/models/network_blocks.py): SiLU or LeakyReLU(0.1),
    depthwise 3x3 + pointwise pairs in the nano model."""

    def __init__(self, name: str, depthwise: bool, leaky: bool):
        super().__init__(name, (1.0, 1.0, 1 << 30))
        self.depthwise, self.leaky = depthwise, leaky

    def conv(
        self, x: str, cin: int, cout: int, k: int = 1, s: int = 1, group: int = 1, act: bool = True, p: str = ""
    ) -> str:
        if self.depthwise and k > 1 and group == 1:  # DWConv: a depthwise k x k, then a 1x1
            x = self.conv(x, cin, cin, k, s, group=cin, p=f"{p}.dw")
            k, s = 1, 1
        y = self.g.conv(x, cin, cout, k, s, group, prefix=p)
        if not act:
            return y
        if self.leaky:
            return self.g.op("LeakyRelu", [y], alpha=0.1)
        return self.g.op("Mul", [y, self.g.op("Sigmoid", [y])])

    def csp(self, x: str, cin: int, cout: int, n: int, shortcut: bool, p: str) -> str:
        hidden = int(cout * 0.5)
        a = self.conv(x, cin, hidden, p=f"{p}.conv1")
        for i in range(n):
            y = self.conv(self.conv(a, hidden, hidden, p=f"{p}.m{i}.conv1"), hidden, hidden, 3, p=f"{p}.m{i}.conv2")
            a = self.g.op("Add", [y, a]) if shortcut else y
        b = self.conv(x, cin, hidden, p=f"{p}.conv2")
        return self.conv(self.g.op("Concat", [a, b], axis=1), 2 * hidden, cout, p=f"{p}.conv3")


def yolox(scale: str = "s", batch: int = 1, resolution: int = 640, leaky: bool = False) -> onnx.ModelProto:
    """YOLOX nano/tiny/s/m/l/x (Ge et al. 2021, Megvii-BaseDetection/YOLOX: yolox/models/darknet.py
    CSPDarknet, yolo_pafpn.py, yolo_head.py): a Focus stem (space-to-depth), CSP stages, SPP (5/9/13),
    a PAFPN and a decoupled head (a 1x1 stem, two 3x3 convs per branch, class, box and objectness).
    ``leaky``: Hailo's *_leaky variants (LeakyReLU 0.1 in place of SiLU)."""
    depth, width, depthwise = YOLOX_SCALES[scale]
    y = _YoloX(f"yolox_{scale}_{resolution}", depthwise, leaky)
    g, base, n = y.g, int(width * 64), max(round(depth * 3), 1)
    x = g.input("images", FLOAT, [batch, 3, resolution, resolution])
    quarters = [
        g.op("Slice", [x, g.ints([r, c]), g.ints([resolution, resolution]), g.ints([2, 3]), g.ints([2, 2])])
        for r, c in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]  # Focus: four strided slices, then a conv
    x = y.conv(g.op("Concat", quarters, axis=1), 12, base, 3, p="stem")
    x = y.csp(y.conv(x, base, 2 * base, 3, 2, p="dark2.0"), 2 * base, 2 * base, n, True, "dark2.1")
    c3 = y.csp(y.conv(x, 2 * base, 4 * base, 3, 2, p="dark3.0"), 4 * base, 4 * base, 3 * n, True, "dark3.1")
    c4 = y.csp(y.conv(c3, 4 * base, 8 * base, 3, 2, p="dark4.0"), 8 * base, 8 * base, 3 * n, True, "dark4.1")
    x = y.conv(c4, 8 * base, 16 * base, 3, 2, p="dark5.0")
    spp = [y.conv(x, 16 * base, 8 * base, p="dark5.spp.conv1")]
    spp += [g.op("MaxPool", [spp[0]], kernel_shape=[k, k], strides=[1, 1], pads=[k // 2] * 4) for k in (5, 9, 13)]
    x = y.conv(g.op("Concat", spp, axis=1), 32 * base, 16 * base, p="dark5.spp.conv2")
    c5 = y.csp(x, 16 * base, 16 * base, n, False, "dark5.2")
    f5 = y.conv(c5, 16 * base, 8 * base, p="lateral_conv0")
    p4 = y.csp(g.op("Concat", [y.upsample(f5), c4], axis=1), 16 * base, 8 * base, n, False, "C3_p4")
    f4 = y.conv(p4, 8 * base, 4 * base, p="reduce_conv1")
    out3 = y.csp(g.op("Concat", [y.upsample(f4), c3], axis=1), 8 * base, 4 * base, n, False, "C3_p3")
    out4 = y.csp(
        g.op("Concat", [y.conv(out3, 4 * base, 4 * base, 3, 2, p="bu_conv2"), f4], axis=1),
        8 * base,
        8 * base,
        n,
        False,
        "C3_n3",
    )
    out5 = y.csp(
        g.op("Concat", [y.conv(out4, 8 * base, 8 * base, 3, 2, p="bu_conv1"), f5], axis=1),
        16 * base,
        16 * base,
        n,
        False,
        "C3_n4",
    )
    head, outs = int(256 * width), []
    for i, (t, c) in enumerate(((out3, 4 * base), (out4, 8 * base), (out5, 16 * base))):
        s = y.conv(t, c, head, p=f"head.stem{i}")
        cls = y.conv(y.conv(s, head, head, 3, p=f"head.cls{i}.0"), head, head, 3, p=f"head.cls{i}.1")
        reg = y.conv(y.conv(s, head, head, 3, p=f"head.reg{i}.0"), head, head, 3, p=f"head.reg{i}.1")
        box, obj = g.conv(reg, head, 4, 1, prefix=f"head.box{i}"), g.conv(reg, head, 1, 1, prefix=f"head.obj{i}")
        score = g.conv(cls, head, CLASSES, 1, prefix=f"head.cls_pred{i}")
        level = g.op("Concat", [box, g.op("Sigmoid", [obj]), g.op("Sigmoid", [score])], axis=1)
        side = resolution // (8 << i)
        outs.append(g.op("Reshape", [level, g.ints([batch, 5 + CLASSES, side * side])]))
    g.output(g.op("Transpose", [g.op("Concat", outs, axis=2)], perm=[0, 2, 1]), "output")
    return g.model()
