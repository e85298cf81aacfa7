"""attention ops (rules arrive with the op-coverage work)."""

from __future__ import annotations
