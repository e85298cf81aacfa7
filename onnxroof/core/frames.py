"""pandas, imported where a record is turned into a DataFrame (``to_pandas``): an optional
dependency, so its absence is a one-line error that says how to install it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import UsageError


def data_frame(rows: Sequence[dict], what: str, columns: Sequence[str] | None = None) -> Any:
    """``rows`` (one dict a row) as a pandas DataFrame, with ``columns`` in this order (when given:
    an empty frame keeps them); ``what`` names the method in the error when pandas is missing."""
    try:
        import pandas
    except ImportError:
        raise UsageError(f"{what} needs pandas, which is not installed: pip install pandas") from None
    return pandas.DataFrame(list(rows), columns=list(columns) if columns is not None else None)
