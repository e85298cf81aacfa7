"""Every option of one analysis, in one typed object: what ``analyze()`` takes as keyword
arguments and the command line as flags.

The fields are named as analyze()'s arguments, and an :class:`~onnxroof.core.errors.OptionError`
names the option at fault by its field: the Python API words it as is, the command line as the
flag that sets it. Every value's type and range is checked once, here, when the object is made
(``dims={"seq": 12.7}``, ``batch="4"``, ``partial="no"``, ``targets=[5]`` and a count past the
largest dim ONNX stores are refused, never rounded or iterated letter by letter); the values are
kept as given (a mapping, or the ``NAME:1,3,224,224`` strings of the flags), and what only the
model can judge (a dim name, a ``dims`` string's form) is checked by the stage that first reads it.

>>> options = AnalysisOptions(dims=["batch=8"], targets=["l4"])
>>> options.dims, options.targets
(('batch=8',), ('l4',))
>>> from dataclasses import replace
>>> replace(options, batch=4).batch  # a variant: sweeps, formulas
4
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, Union

from .core.errors import OptionError
from .core.tensors import MAX_DIM, MAX_DIM_TEXT

if TYPE_CHECKING:  # targets are loaded by the pipeline, and only when given
    from .roofline.targets import Target

# the forms the flags give and the API takes: a mapping, or the flags' strings
InputShapes = Union[Mapping[str, Sequence[int]], Sequence[str]]
Dims = Union[Mapping[str, int], Sequence[str]]
# the most devices a plan considers (a rack-scale NVLink domain has 576)
MAX_DEVICES = 4096
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
    devices: int = 1
    """Plan the model on up to this many devices of each target (tensor and pipeline parallelism
    over the target's ``[interconnect]``); 1: one device, no plan."""
    micro_batches: int = 1
    """Pipeline parallelism: the micro-batches in flight (the bubble is (p - 1) / (m + p - 1))."""

    def __post_init__(self) -> None:
        # iterables as tuples: the options are read more than once (a sweep, a formula's grid); a
        # lone string is one item (targets="l4" is one target, not four)
        for name in ("input_shapes", "dims", "values"):
            given = getattr(self, name)
            if given is not None and not isinstance(given, Mapping):
                object.__setattr__(self, name, _items(name, given))
        targets = self.targets
        object.__setattr__(self, "targets", (targets,) if isinstance(targets, (str, os.PathLike)) or
                           _is_target(targets) else _items("targets", targets))
        if self.fusion is not None and not isinstance(self.fusion, str):
            object.__setattr__(self, "fusion", _items("fusion", self.fusion))
        self._check()

    def _check(self) -> None:
        """Every value of the right type and in range, or an OptionError naming the argument."""
        if isinstance(self.input_shapes, Mapping):
            for name, shape in self.input_shapes.items():
                _name("input_shapes", name)
                if isinstance(shape, (str, bytes)) or not (isinstance(shape, Sequence) or hasattr(shape, "tolist")):
                    raise OptionError("input_shapes", "input_shapes[{name!r}] = {shape}: give the shape as a list of "
                                      "integers, e.g. input_shapes={{{name!r}: [1, 3, 224, 224]}}", name=name,
                                      shape=_shown(shape))
                for dim in shape:
                    _count("input_shapes", dim, name, minimum=0)
        elif self.input_shapes is not None:
            _strings("input_shapes", self.input_shapes, "{'input': [1, 3, 224, 224]} or ['input:1,3,224,224']")
        if isinstance(self.dims, Mapping):
            for name, value in self.dims.items():
                _name("dims", name)
                _count("dims", value, name, minimum=0)
        elif self.dims is not None:
            _strings("dims", self.dims, "{'batch': 1} or ['batch=1']")
        if isinstance(self.values, Mapping):
            for name, value in self.values.items():
                _name("values", name)
                if hasattr(value, "tolist"):  # a numpy array or scalar
                    import numpy as np

                    value = np.asarray(value).reshape(-1).tolist()
                for number in (value if isinstance(value, (list, tuple)) else (value,)):
                    if not isinstance(number, numbers.Real) or not math.isfinite(number):
                        raise OptionError("values", "values[{name!r}] = {value}: give a finite number or a list of "
                                          "them", name=name, value=_shown(value))
        elif self.values is not None:
            _strings("values", self.values, "{'sr': 16000} or ['sr=16000']")
        for target in self.targets:
            if not isinstance(target, (str, os.PathLike)) and not _is_target(target):
                raise OptionError("targets", "targets: {target} is not a target: give bundled target names, target "
                                  "file paths or Target objects, e.g. targets=['l4']", target=_shown(target))
        if self.fusion is not None and not isinstance(self.fusion, str):
            _strings("fusion", self.fusion, "'epilogue' or ['epilogue', 'elementwise']")
        for name, minimum in (("loop_trips", 1), ("batch", 1), ("seq", 1), ("context", 0), ("encoder_seq", 1),
                              ("micro_batches", 1)):
            if getattr(self, name) is not None:
                _count(name, getattr(self, name), None, minimum)
        _count("devices", self.devices, None, 1, MAX_DEVICES)  # a count of devices, not a dim: its own range
        for name in ("elementwise_in_place", "overhead", "checker_in_child", "partial", "ignore_missing_dims",
                     "search_order"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(name, "{name}={value}: give True or False", name=name,
                                  value=_shown(getattr(self, name)))
        if not isinstance(self.dtype, str):
            raise OptionError("dtype", "dtype={value}: give a name such as 'fp16' (or 'model': as stored)",
                              value=_shown(self.dtype))
        if self.phase is not None and self.phase not in ("prefill", "decode"):
            raise OptionError("phase", "{opt.phase} {value}: choose prefill or decode", value=_shown(self.phase))

    @classmethod
    def given(cls, options: AnalysisOptions | None, arguments: Mapping[str, object],
              function: str = "analyze") -> AnalysisOptions:
        """The options of a call (of ``function``) that takes them as an object (``options=``) or
        one by one (analyze()'s keyword arguments), not both."""
        if options is None:
            check_call(function, (), arguments)
            return cls(**arguments)  # type: ignore[arg-type]
        if not isinstance(options, AnalysisOptions):
            raise OptionError("options", "options={value}: give an AnalysisOptions (or the options one by one)",
                              value=_shown(options))
        if arguments:
            raise OptionError("options", "give the options as options= or one by one, not both ({given})",
                              given=", ".join(arguments))
        return options

    def changed(self) -> dict[str, object]:
        """The options that differ from their defaults, by name.

        >>> AnalysisOptions(batch=2, dims={}).changed()
        {'dims': {}, 'batch': 2}
        """
        default = AnalysisOptions()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}


def check_call(function: str, positional: tuple, keywords: Mapping[str, object], also: Sequence[str] = ()) -> None:
    """A call of ``function`` (analyze, formulas) that Python would refuse with a bare TypeError
    (options given by position, a keyword no option has) as an OptionError naming the argument;
    ``also``: the function's own keywords (progress, options)."""
    if positional:
        raise OptionError("model", "{function}() takes the model as its one positional argument and the options by "
                          "name: {count} more given by position; e.g. {function}(model, dims={{'batch': 1}})",
                          function=function, count=len(positional))
    names = [f.name for f in fields(AnalysisOptions)] + list(also)
    unknown = next((key for key in keywords if key not in names), None)
    if unknown is not None:
        close = difflib.get_close_matches(str(unknown), names, 1)
        raise OptionError(str(unknown), "{function}(): no option named {name}{hint}; the options: {names}",
                          function=function, name=_shown(unknown), names=", ".join(names),
                          hint=f" (did you mean {close[0]}?)" if close else "")


def check_progress(progress: Callable[[str], None] | None) -> None:
    """``progress`` is None or called with each stage's name."""
    if progress is not None and not callable(progress):
        raise OptionError("progress", "progress={value}: give a function called with each stage's name (or None)",
                          value=_shown(progress))


def _shown(value: object) -> str:
    """A value as a message shows it: its repr, cut short (a long one is not echoed whole)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({type(value).__name__})"


def _is_target(value: object) -> bool:
    from .roofline.targets import Target  # only when a value is neither a name nor a path

    return isinstance(value, Target)


def _items(option: str, given: object) -> tuple:
    """A lone string as one item, any other iterable as a tuple, anything else refused."""
    if isinstance(given, str):
        return (given,)
    if isinstance(given, (bytes, bytearray)) or not hasattr(given, "__iter__"):
        mapping = " (or a mapping)" if option in ("input_shapes", "dims", "values") else ""
        raise OptionError(option, "{name}={value}: give a list{mapping}", name=option, value=_shown(given),
                          mapping=mapping)
    return tuple(given)


def _strings(option: str, items: tuple, example: str) -> None:
    wrong = next((item for item in items if not isinstance(item, str)), None)
    if wrong is not None:
        raise OptionError(option, "{name}: {value} is not a string; give {example}", name=option,
                          value=_shown(wrong), example=example)


def _name(option: str, name: object) -> None:
    if not isinstance(name, str) or not name:
        raise OptionError(option, "{name}: the key {value} is not a name; give a non-empty string",
                          name=option, value=_shown(name))


def _count(option: str, value: object, where: str | None, minimum: int, maximum: int | None = None) -> None:
    """A whole number in [minimum, MAX_DIM] (or [minimum, ``maximum``], a count with a range of its
    own, said in the message): not a bool, a float or a string. ``where`` is the mapping key it is
    the value of (None: the option's own value, which a flag may have given)."""
    head = "{opt.%s} {value}" % option if where is None else "%s[{where!r}] = {value}" % option
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError(option, head + ": give a whole number (an int)", where=where, value=_shown(value))
    if maximum is not None and not minimum <= value <= maximum:
        raise OptionError(option, head + ": give a whole number from {minimum} to {maximum:,}", where=where,
                          value=int(value), minimum=minimum, maximum=maximum)
    if value < minimum:
        raise OptionError(option, head + ": give a whole number of {minimum} or more", where=where, value=int(value),
                          minimum=minimum)
    if value > MAX_DIM:
        raise OptionError(option, head + ": over the limit, {limit}", where=where, value=int(value), limit=MAX_DIM_TEXT)
