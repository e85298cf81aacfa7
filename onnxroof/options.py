"""Every option of one analysis, in one typed object: what ``analyze()`` takes as keyword
arguments and the command line as flags.

Each option is declared once, as a field of :class:`AnalysisOptions` made by :func:`option`:
its default, its words (``doc``), its check, the flag that sets it (:class:`Flag`: its name,
help, group and place in ``--help``), its role in a formula's analyses and whether the stages
before shape inference read it. The command line's flags and ``FLAGS``, ``analyze()``'s
documentation, the formula option sets and the pipeline's ``BACK_OPTIONS`` are made from them.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from .core.errors import OptionError
from .core.option_fields import Check, Choice, Count, Flag, Option, check_count, option, shown

if TYPE_CHECKING:  # targets are loaded by the pipeline, and only when given
    from .roofline.targets import Target

# the forms the flags give and the API takes: a mapping, or the flags' strings
InputShapes = Mapping[str, Sequence[int]] | Sequence[str]
Dims = Mapping[str, int] | Sequence[str]
# the most devices a plan considers (a rack-scale NVLink domain has 576)
MAX_DEVICES = 4096
Values = Mapping[str, Sequence[float] | float] | Sequence[str]

# the groups --help lists the flags in (the command line adds its own flags to them)
SHAPES = "shapes and values (a batch dim left open is 1; any other open dim exits 2)"
TIMING = "targets and timing"
# an option's role in the analyses a formula is fitted to (symbolic.formulas.formula_options)
COUNTING = "counting"  # decides the counts a formula is fitted to
BINDING = "binding"  # values for dims: a formula leaves them free unless bound
TIMING_ROLE = "timing"  # decides the latency formulas (not devices: a formula is one device's)


def _switch(option: str, value: object) -> None:
    if not isinstance(value, bool):
        raise OptionError(option, "{name}={value}: give True or False", name=option, value=shown(value))


def _dtype_name(option: str, value: object) -> None:
    if not isinstance(value, str):
        raise OptionError(
            option, "dtype={value}: give a name such as 'fp16' (or 'model': as stored)", value=shown(value)
        )


def _mapping_or_strings(entry: Callable[[str, str, Any], None], example: str) -> Check:
    """A mapping whose keys are names and whose values ``entry`` checks, or the flags' strings."""

    def check(option: str, given: object) -> None:
        if isinstance(given, Mapping):
            for name, value in given.items():
                _name(option, name)
                entry(option, name, value)
        elif given is not None:
            _strings(option, given, example)  # type: ignore[arg-type]  # (a tuple: _listed made it one)

    return check


def _shape(option: str, name: str, shape: Any) -> None:
    if isinstance(shape, (str, bytes)) or not (isinstance(shape, Sequence) or hasattr(shape, "tolist")):
        raise OptionError(
            option,
            "input_shapes[{name!r}] = {shape}: give the shape as a list of integers, e.g. "
            "input_shapes={{{name!r}: [1, 3, 224, 224]}}",
            name=name,
            shape=shown(shape),
        )
    for dim in shape:
        check_count(option, dim, name, minimum=0)


def _dim(option: str, name: str, value: Any) -> None:
    check_count(option, value, name, minimum=0)


def _value(option: str, name: str, value: Any) -> None:
    if hasattr(value, "tolist"):  # a numpy array or scalar
        import numpy as np

        value = np.asarray(value).reshape(-1).tolist()
    for number in value if isinstance(value, (list, tuple)) else (value,):
        if not isinstance(number, numbers.Real) or not math.isfinite(number):
            raise OptionError(
                option,
                "values[{name!r}] = {value}: give a finite number or a list of them",
                name=name,
                value=shown(value),
            )


def _targets(option: str, targets: Sequence[object]) -> None:
    for target in targets:
        if not isinstance(target, (str, os.PathLike)) and not _is_target(target):
            raise OptionError(
                option,
                "targets: {target} is not a target: give bundled target names, target file "
                "paths or Target objects, e.g. targets=['l4']",
                target=shown(target),
            )


def _fusion(option: str, fusion: object) -> None:
    if fusion is not None and not isinstance(fusion, str):
        # (type: ignore below) not a str: _policy_items made it a tuple
        _strings(option, fusion, "'epilogue' or ['epilogue', 'elementwise']")  # type: ignore[arg-type]


def _listed(option: str, given: object) -> object:
    """A mapping as given, anything else as a tuple of items (the options are read more than
    once: a sweep, a formula's grid)."""
    return given if given is None or isinstance(given, Mapping) else _items(option, given)


def _target_items(option: str, targets: object) -> tuple:
    """A lone string, path or Target is one target (targets="l4" is one target, not four)."""
    return (targets,) if isinstance(targets, (str, os.PathLike)) or _is_target(targets) else _items(option, targets)


def _policy_items(option: str, fusion: object) -> object:
    return fusion if fusion is None or isinstance(fusion, str) else _items(option, fusion)


@dataclass(frozen=True)
class AnalysisOptions:
    """How one model is analysed. Defaults: the model as stored, no target, every dim bound."""

    input_shapes: InputShapes | None = option(
        None,
        "Input name -> shape, or ``NAME:1,3,224,224`` strings.",
        _mapping_or_strings(_shape, "{'input': [1, 3, 224, 224]} or ['input:1,3,224,224']"),
        Flag(
            "--input-shape",
            SHAPES,
            1,
            "set an input's shape, e.g. input:1,3,224,224 or input:1x3x224x224 (repeatable)",
            metavar="NAME:D1,D2,...",
            repeatable=True,
        ),
        COUNTING,
        convert=_listed,
    )
    dims: Dims | None = option(
        None,
        "Symbolic dim name -> value, or ``SYMBOL=VALUE`` strings.",
        _mapping_or_strings(_dim, "{'batch': 1} or ['batch=1']"),
        Flag(
            "--dim",
            SHAPES,
            2,
            "bind a named (symbolic) dim everywhere, e.g. batch=1 (repeatable)",
            metavar="SYMBOL=VALUE",
            repeatable=True,
        ),
        BINDING,
        convert=_listed,
    )
    loop_trips: int | None = option(
        None,
        "The trip count of Loops whose count the model does not fix.",
        Count(1),
        Flag("--loop-trips", SHAPES, 5, "trip count for Loops whose count is not a constant in the model", metavar="N"),
        COUNTING,
        back=True,
    )
    elementwise_in_place: bool = option(
        False,
        "Single-consumer elementwise ops may overwrite their input (memory).",
        _switch,
        Flag(
            "--in-place",
            TIMING,
            8,
            "let single-consumer elementwise ops overwrite their input (memory analysis)",
            switch=True,
        ),
        COUNTING,
        back=True,
    )
    targets: Sequence[str | Target] = option(
        (),
        "Bundled target names, target file paths or Target objects to place the model on.",
        _targets,
        Flag(
            "--target",
            TIMING,
            1,
            "place the model on a hardware target's roofline (repeatable; `onnxroof targets` lists them)",
            metavar="NAME|FILE.toml",
            repeatable=True,
        ),
        TIMING_ROLE,
        back=True,
        convert=_target_items,
    )
    dtype: str = option(
        "model",
        '"model" (as stored) or fp32 fp16 bf16 fp8 int8 int4: re-cost as if stored and run in it.',
        _dtype_name,
        Flag(
            "--dtype",
            TIMING,
            2,
            "re-cost the model as if stored and run in this type (default: as stored)",
            choices=("fp32", "fp16", "bf16", "fp8", "int8", "int4"),
        ),
        COUNTING,
        back=True,
    )
    batch: int | None = option(
        None,
        "Axis 0 of every input.",
        Count(1),
        Flag("--batch", SHAPES, 3, "set axis 0 of every input to N", metavar="N"),
        BINDING,
    )
    phase: str | None = option(
        None,
        'A KV-cached decoder\'s phase: "prefill" (with ``seq``) or "decode" (with ``context``).',
        Choice(("prefill", "decode")),
        Flag("--phase", SHAPES, 6, "a KV-cached decoder's phase: prefill (with --seq) or decode (with --context)"),
        COUNTING,
    )
    seq: int | None = option(
        None,
        "Prefill: the prompt length.",
        Count(1),
        Flag("--seq", SHAPES, 7, "prefill: the prompt length", metavar="N"),
        BINDING,
    )
    context: int | None = option(
        None,
        "Decode: the tokens attended, the new one included.",
        Count(0),
        Flag(
            "--context",
            SHAPES,
            8,
            "decode: the tokens attended in the step, the new one included (N - 1 cached)",
            metavar="N",
        ),
        BINDING,
    )
    encoder_seq: int | None = option(
        None,
        "A seq2seq decoder's phase: the length of the encoder output its cross-attention reads.",
        Count(1),
        Flag(
            "--encoder-seq",
            SHAPES,
            9,
            "with --phase, for a seq2seq decoder (Whisper, T5): the encoder output's "
            "length its cross-attention reads, when the model leaves it open",
            metavar="N",
        ),
        BINDING,
    )
    fusion: str | Sequence[str] | None = option(
        None,
        'A fusion policy for every target ("none", "epilogue", "all", rule sets such as '
        '"epilogue,elementwise", or a list of rule sets); None: each target\'s own policy.',
        _fusion,
        Flag(
            "--fusion",
            TIMING,
            3,
            "group nodes into kernels as a runtime does, on every target: none (one kernel "
            "per node), epilogue, all, or rule sets such as epilogue,elementwise (default: each target's policy)",
            metavar="POLICY",
        ),
        TIMING_ROLE,
        back=True,
        convert=_policy_items,
    )
    overhead: bool = option(
        True,
        "False leaves out every target's launch cost per kernel and its efficiency figures.",
        _switch,
        Flag(
            "--no-overhead",
            TIMING,
            4,
            "leave out every target's launch cost per kernel and its efficiency figures "
            "(every kernel at the roofline; with --fusion none: the plain per-node roofline)",
            switch=True,
            negated=True,
        ),
        TIMING_ROLE,
        back=True,
    )
    checker_in_child: bool = option(
        False,
        "Run the ONNX checker on a model file in a forked child while the analysis goes on (the "
        "onnxroof program does; a process holding much memory should not fork).",
        _switch,
        back=True,
    )
    values: Values | None = option(
        None,
        "Input name -> the values the graph computes with, or ``NAME=V1,V2`` strings.",
        _mapping_or_strings(_value, "{'sr': 16000} or ['sr=16000']"),
        Flag(
            "--value",
            SHAPES,
            4,
            "the value of an input the graph computes with, e.g. sr=16000 (an If on the "
            "sample rate is then costed on the branch it takes); repeatable",
            metavar="NAME=V1,V2,...",
            repeatable=True,
        ),
        COUNTING,
        convert=_listed,
    )
    partial: bool = option(
        False,
        "Leave input dims unbound (nothing assumed; the nodes depending on them not counted) "
        "instead of raising :class:`~onnxroof.core.errors.UnboundDims`.",
        _switch,
        Flag(
            "--partial",
            SHAPES,
            10,
            "analyse with input dims left unbound: nothing assumed, and the nodes depending on them not counted",
            switch=True,
        ),
    )
    ignore_missing_dims: bool = option(
        False, "``dims`` may name dims this model lacks (one set of dims for several models).", _switch
    )
    search_order: bool = option(
        True,
        "Search the execution order with the lowest peak (False: ``memory.best`` is the model's order).",
        _switch,
        back=True,
    )
    devices: int = option(
        1,
        "Plan the model on up to this many devices of each target (tensor and pipeline parallelism "
        "over the target's ``[interconnect]``); 1: one device, no plan.",
        Count(1, MAX_DEVICES, required=True),
        Flag(
            "--devices",
            TIMING,
            6,
            "plan the model on up to N devices of each target: tensor and pipeline "
            "parallelism over the target's interconnect, memory per device, the fewest devices that fit (1 to "
            f"{MAX_DEVICES:,}; default: 1)",
            metavar="N",
        ),
        back=True,
    )
    micro_batches: int = option(
        1,
        "Pipeline parallelism: the micro-batches in flight (the bubble is (p - 1) / (m + p - 1)).",
        Count(1),
        Flag(
            "--micro-batches",
            TIMING,
            7,
            "with --devices: the micro-batches a pipeline keeps in flight (default: 1)",
            metavar="M",
        ),
        back=True,
    )

    def __post_init__(self) -> None:
        for name, declared in OPTIONS.items():
            if declared.convert is not None:
                object.__setattr__(self, name, declared.convert(name, getattr(self, name)))
        self._check()

    def _check(self) -> None:
        """Every value of the right type and in range, or an OptionError naming the argument."""
        for name, declared in OPTIONS.items():
            declared.check(name, getattr(self, name))

    @classmethod
    def given(
        cls, options: AnalysisOptions | None, arguments: Mapping[str, object], function: str = "analyze"
    ) -> AnalysisOptions:
        """The options of a call (of ``function``) that takes them as an object (``options=``) or
        one by one (analyze()'s keyword arguments), not both."""
        if options is None:
            check_call(function, (), arguments)
            # (type: ignore below) each keyword is checked by check_call and the field's check, not by type
            return cls(**arguments)  # type: ignore[arg-type]
        if not isinstance(options, AnalysisOptions):
            raise OptionError(
                "options", "options={value}: give an AnalysisOptions (or the options one by one)", value=shown(options)
            )
        if arguments:
            raise OptionError(
                "options", "give the options as options= or one by one, not both ({given})", given=", ".join(arguments)
            )
        return options

    def changed(self) -> dict[str, object]:
        """The options that differ from their defaults, by name.

        >>> AnalysisOptions(batch=2, dims={}).changed()
        {'dims': {}, 'batch': 2}
        """
        default = AnalysisOptions()
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)
        }


# each option's declaration, by name (AnalysisOptions' field), in the fields' order
OPTIONS: dict[str, Option] = {f.name: f.metadata["option"] for f in fields(AnalysisOptions)}
# each option the command line sets -> the flag that sets it (an OptionError names it so there)
FLAGS: dict[str, str] = {name: declared.flag.name for name, declared in OPTIONS.items() if declared.flag}
# the options the stages up to shape inference do not read
BACK_OPTIONS = frozenset(name for name, declared in OPTIONS.items() if declared.back)


def _documented() -> None:
    """The class's documentation lists the options, as analyze()'s does."""
    if AnalysisOptions.__doc__ is not None:  # (none under python -OO)
        AnalysisOptions.__doc__ += "\n\n    The options:\n\n" + options_doc("    ") + "\n"


def with_role(*roles: str) -> tuple[str, ...]:
    """The options of these roles in a formula's analyses (COUNTING, BINDING, TIMING_ROLE)."""
    return tuple(name for name, declared in OPTIONS.items() if declared.role in roles)


def formula_options(given: AnalysisOptions, bound: bool = True) -> AnalysisOptions:
    """The options of the analyses a formula is fitted to: those that change the counts, with the
    dims ``given`` binds (``bound``) or without (the report's formulas are in every dim the model
    leaves free, whatever values its numbers take), and the targets' for their latency formulas;
    every other option at its default. The roles are the options' declarations'
    (``role``)."""
    roles = (COUNTING,) + ((BINDING,) if bound else ()) + ((TIMING_ROLE,) if given.targets else ())
    return replace(AnalysisOptions(), **{name: getattr(given, name) for name in with_role(*roles)})


def options_doc(indent: str = "") -> str:
    """Each option, a paragraph each as its declaration words it: the keywords' documentation."""
    import textwrap

    def paragraph(name: str, declared: Option) -> str:
        flag = f" Its flag: ``{declared.flag.name}``." if declared.flag else ""
        return textwrap.fill(
            f"``{name}``: {declared.doc}{flag}",
            96,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_on_hyphens=False,
            break_long_words=False,
        )

    return "\n".join(paragraph(name, declared) for name, declared in OPTIONS.items())


def check_call(function: str, positional: tuple, keywords: Mapping[str, object], also: Sequence[str] = ()) -> None:
    """A call of ``function`` (analyze, formulas) that Python would refuse with a bare TypeError
    (options given by position, a keyword no option has) as an OptionError naming the argument;
    ``also``: the function's own keywords (progress, options)."""
    if positional:
        raise OptionError(
            "model",
            "{function}() takes the model as its one positional argument and the options by "
            "name: {count} more given by position; e.g. {function}(model, dims={{'batch': 1}})",
            function=function,
            count=len(positional),
        )
    names = [f.name for f in fields(AnalysisOptions)] + list(also)
    unknown = next((key for key in keywords if key not in names), None)
    if unknown is not None:
        close = difflib.get_close_matches(str(unknown), names, 1)
        raise OptionError(
            str(unknown),
            "{function}(): no option named {name}{hint}; the options: {names}",
            function=function,
            name=shown(unknown),
            names=", ".join(names),
            hint=f" (did you mean {close[0]}?)" if close else "",
        )


def check_progress(progress: Callable[[str], None] | None) -> None:
    """``progress`` is None or called with each stage's name."""
    if progress is not None and not callable(progress):
        raise OptionError(
            "progress",
            "progress={value}: give a function called with each stage's name (or None)",
            value=shown(progress),
        )


def _is_target(value: object) -> bool:
    from .roofline.targets import Target  # only when a value is neither a name nor a path

    return isinstance(value, Target)


def _items(option: str, given: object) -> tuple:
    """A lone string as one item, any other iterable as a tuple, anything else refused."""
    if isinstance(given, str):
        return (given,)
    if isinstance(given, (bytes, bytearray)) or not hasattr(given, "__iter__"):
        mapping = " (or a mapping)" if option in ("input_shapes", "dims", "values") else ""
        raise OptionError(
            option, "{name}={value}: give a list{mapping}", name=option, value=shown(given), mapping=mapping
        )
    return tuple(given)


def _strings(option: str, items: tuple, example: str) -> None:
    wrong = next((item for item in items if not isinstance(item, str)), None)
    if wrong is not None:
        raise OptionError(
            option, "{name}: {value} is not a string; give {example}", name=option, value=shown(wrong), example=example
        )


def _name(option: str, name: object) -> None:
    if not isinstance(name, str) or not name:
        raise OptionError(
            option, "{name}: the key {value} is not a name; give a non-empty string", name=option, value=shown(name)
        )


_documented()
