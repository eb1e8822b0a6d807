"""Importing the benchmark scripts (bench/) into a test process."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def import_bench(*names: str) -> list[ModuleType]:
    """The bench modules `names`. _benchlib puts the code under test first on PYTHONPATH when
    imported: that is kept out of this process's other tests, as is the bench folder."""
    saved = dict(os.environ)
    sys.path.insert(0, str(BENCH))
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(BENCH))
        os.environ.clear()
        os.environ.update(saved)
