"""Number formatting: SI prefixes for counts, IEC prefixes for bytes.

>>> si(2_424_832)
'2.42 M'
>>> iec(1_314_344)
'1.25 MiB'
>>> si(999_999), iec(1_048_575), intensity(1234.5), seconds(0.000103)
('1 M', '1 MiB', '1,234', '103 µs')
"""

from __future__ import annotations

import math
import re

_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_IEC = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def si(value: float | int | None, unit: str = "") -> str:
    """Format a count with an SI prefix and three significant digits."""
    if value is None:
        return "?"
    # compare the rounded value, so that 999,999 reads "1 M", not "1e+03 k"
    rounded = abs(float(f"{value:.3g}"))
    for scale, prefix in _SI:
        if rounded >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value)}{' ' + unit if unit else ''}"
    return f"{value:.3g}{' ' + unit if unit else ''}"


def iec(value: int | float | None) -> str:
    """Format a byte count with an IEC (binary) prefix.

    >>> iec(1_048_575), iec(1_024_000), iec(1536)
    ('1 MiB', '1,000 KiB', '1.5 KiB')
    """
    if value is None:
        return "?"
    size = abs(value)
    for scale, prefix in _IEC:
        if size >= scale * 0.9995:  # 1,048,575 B reads "1 MiB", not "1.02e+03 KiB"
            scaled = value / scale  # 1,000 to 1,023 of a unit: no exponent
            return f"{scaled:,.0f} {prefix}" if abs(scaled) >= 999.5 else f"{scaled:.3g} {prefix}"
    return f"{int(value)} B"


def intensity(value: float | None) -> str:
    """Format an arithmetic intensity in FLOP/byte."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 999.5 else f"{value:.3g}"


# what a number's suffix scales it by, in what users type (--fail-if 'latency[l4]<1.5ms', 'params>5M',
# calibrate --from-trace M=T@12.3ms): counts in SI, bytes in SI and IEC, times, energies
SUFFIX_SCALES: dict[str, float] = {
    "": 1,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "B": 1,
    "kB": 1e3,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "s": 1,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "J": 1,
    "mJ": 1e-3,
    "uJ": 1e-6,
}
TIME_SUFFIXES = ("s", "ms", "us", "µs", "ns")
# a number as typed: 12, 12.3, .5, 1e-3 (groups "number" and "exp")
NUMBER_PATTERN = r"(?P<number>\d+(?:\.\d*)?|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?"
_TIME = re.compile(NUMBER_PATTERN + r"\s*(?P<suffix>[A-Za-zµ]+)")


def time_value(text: str) -> float | None:
    """Seconds in a time as typed with its unit; None when ``text`` is not one.

    >>> time_value("12.3ms"), time_value("450 us"), time_value("2e-3s"), time_value("12"), time_value("5MB")
    (0.0123, 0.00045, 0.002, None, None)
    """
    found = _TIME.fullmatch(text.strip())
    if not found or found["suffix"] not in TIME_SUFFIXES:
        return None
    return float(f"{found['number']}e{found['exp'] or 0}") * SUFFIX_SCALES[found["suffix"]]


def rate(value: float, band: float | None = None) -> str:
    """A rate (inferences, frames or tokens per second) with no more digits than its error band
    allows: rounded to the power of ten of the error (90,152.1 at ±17% is 90,000: the error is
    15,000); with no band (a bound, a forecast no measurement covers), three significant digits, as
    a latency has.

    >>> rate(90152.1, 0.17), rate(1234.56, 0.06), rate(74466.7), rate(476.8), rate(3.256), rate(0.0)
    ('90,000', '1,230', '74,500', '477', '3.26', '0')
    """
    if not band or band <= 0 or value <= 0:
        if value >= 100:  # no exponent, thousands separated
            return f"{round(value, 2 - math.floor(math.log10(value))):,.0f}"
        return f"{value:.3g}"
    step = 10 ** math.floor(math.log10(value * band))
    return f"{round(value / step) * step:,.0f}" if step >= 1 else f"{value:,.{min(3, -math.floor(math.log10(step)))}f}"


def seconds(value: float | None) -> str:
    """Format a time in s, ms, µs or ns, three significant digits; a time under a nanosecond,
    below what any figure it is made of resolves, prints as "under 1 ns".

    >>> seconds(2.35e-4), seconds(6.88e-7), seconds(1.91e-12), seconds(0.0)
    ('235 µs', '688 ns', 'under 1 ns', '0 ns')
    """
    if value is not None and 0 < value < 1e-9:
        return "under 1 ns"
    return "-" if value is None else _milli_micro_nano(value, ("s", "ms", "µs", "ns"))


def joules(value: float | None) -> str:
    """Format an energy in J, mJ, µJ or nJ, three significant digits ("n/a" when unknown)."""
    return "n/a" if value is None else _milli_micro_nano(value, ("J", "mJ", "µJ", "nJ"))


def _milli_micro_nano(value: float, units: tuple[str, str, str, str]) -> str:
    for scale, unit in zip((1, 1e-3, 1e-6), units):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} {units[3]}"
