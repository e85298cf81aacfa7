"""Every option of one analysis, in one typed object: what ``analyze()`` takes as keyword
arguments and the command line as flags.

The fields are named as analyze()'s arguments, and an :class:`~onnxroof.core.errors.OptionError`
names the option at fault by its field: the Python API words it as is, the command line as the
flag that sets it. The values are kept as given (a mapping, or the ``NAME:1,3,224,224`` strings
of the flags): each is checked by the stage that first reads it, so that an error comes when it
always did (a bad ``dims`` string after the model file is read, a bad ``fusion`` before).

>>> options = AnalysisOptions(dims=["batch=8"], targets=["l4"])
>>> options.dims, options.targets
(('batch=8',), ('l4',))
>>> from dataclasses import replace
>>> replace(options, batch=4).batch  # a variant: sweeps, formulas
4
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Mapping, Sequence, Union

if TYPE_CHECKING:  # targets are loaded by the pipeline, and only when given
    from .roofline.targets import Target

# the forms the flags give and the API takes: a mapping, or the flags' strings
InputShapes = Union[Mapping[str, Sequence[int]], Sequence[str]]
Dims = Union[Mapping[str, int], Sequence[str]]
Values = Union[Mapping[str, Union[Sequence[float], float]], Sequence[str]]


@dataclass(frozen=True)
class AnalysisOptions:
    """How one model is analysed. Defaults: the model as stored, no target, every dim bound."""

    input_shapes: InputShapes | None = None
    """Input name -> shape, or ``NAME:1,3,224,224`` strings (``--input-shape``)."""
    dims: Dims | None = None
    """Symbolic dim name -> value, or ``SYMBOL=VALUE`` strings (``--dim``)."""
    loop_trips: int | None = None
    """The trip count of Loops whose count the model does not fix (``--loop-trips``)."""
    elementwise_in_place: bool = False
    """Single-consumer elementwise ops may overwrite their input (memory; ``--in-place``)."""
    targets: Sequence[str | Target] = ()
    """Bundled target names, target file paths or Target objects to place the model on."""
    dtype: str = "model"
    """"model" (as stored) or fp32 fp16 bf16 fp8 int8 int4: re-cost as if stored and run in it."""
    batch: int | None = None
    """Axis 0 of every input (``--batch``)."""
    phase: str | None = None
    """A KV-cached decoder's phase: "prefill" (with ``seq``) or "decode" (with ``context``)."""
    seq: int | None = None
    """Prefill: the prompt length."""
    context: int | None = None
    """Decode: the tokens attended, the new one included."""
    encoder_seq: int | None = None
    """A seq2seq decoder's phase: the length of the encoder output its cross-attention reads."""
    fusion: str | Sequence[str] | None = None
    """A fusion policy for every target ("none", "epilogue", "all", rule sets such as
    "epilogue,elementwise", or a list of rule sets); None: each target's own policy."""
    overhead: bool = True
    """False leaves out every target's launch cost per kernel and its efficiency figures."""
    checker_in_child: bool = False
    """Run the ONNX checker on a model file in a forked child while the analysis goes on (the
    onnxroof program does; a process holding much memory should not fork)."""
    values: Values | None = None
    """Input name -> the values the graph computes with, or ``NAME=V1,V2`` strings (``--value``)."""
    partial: bool = False
    """Leave input dims unbound (nothing assumed; the nodes depending on them not counted)
    instead of raising :class:`~onnxroof.core.errors.UnboundDims`."""
    ignore_missing_dims: bool = False
    """``dims`` may name dims this model lacks (one set of dims for several models)."""
    search_order: bool = True
    """Search the execution order with the lowest peak (False: ``memory.best`` is the model's order)."""

    def __post_init__(self) -> None:
        # iterables as tuples: the options are read more than once (a sweep, a formula's grid)
        for name in ("input_shapes", "dims", "values"):
            given = getattr(self, name)
            if given is not None and not isinstance(given, Mapping):
                object.__setattr__(self, name, tuple(given))
        object.__setattr__(self, "targets", tuple(self.targets))
        if self.fusion is not None and not isinstance(self.fusion, str):
            object.__setattr__(self, "fusion", tuple(self.fusion))

    @classmethod
    def given(cls, options: AnalysisOptions | None, arguments: Mapping[str, object]) -> AnalysisOptions:
        """The options of a call that takes them as an object (``options=``) or one by one
        (analyze()'s keyword arguments), not both."""
        if options is None:
            return cls(**arguments)  # type: ignore[arg-type]
        if arguments:
            raise TypeError(f"give the options as options= or one by one, not both ({', '.join(arguments)})")
        return options

    def changed(self) -> dict[str, object]:
        """The options that differ from their defaults, by name.

        >>> AnalysisOptions(batch=2, dims={}).changed()
        {'dims': {}, 'batch': 2}
        """
        default = AnalysisOptions()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}
