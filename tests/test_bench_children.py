"""The benchmarks' child processes run the code under test: a checkout in the working directory
must not shadow the version a comparison names (bench_versions.py once timed one tree twice)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench_versions():
    # _benchlib puts the code under test first on PYTHONPATH when imported: keep that out of
    # this process's other tests.
    saved = dict(os.environ)
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("bench_versions")
    finally:
        sys.path.remove(str(BENCH))
        os.environ.clear()
        os.environ.update(saved)


def _version(folder: Path) -> Path:
    (folder / "cortex_core").mkdir(parents=True)
    (folder / "cortex_core" / "__init__.py").write_text("MARK = 'other version'\n")
    return folder


def test_a_version_is_imported_from_its_folder_inside_a_checkout(bench_versions, tmp_path,
                                                                  monkeypatch):
    # The working directory holds a cortex_core of its own, as the project's folder does.
    monkeypatch.chdir(BENCH.parent)
    other = _version(tmp_path / "other")
    bench_versions.check_version(other)  # exits if the child imported the working directory's
    out = subprocess.run([sys.executable, "-P", "-c", "import cortex_core; print(cortex_core.MARK)"],
                         env=bench_versions.child_env(other), capture_output=True, text=True)
    assert out.stdout.strip() == "other version", out.stderr


def test_a_folder_without_the_version_is_refused(bench_versions, tmp_path, monkeypatch):
    monkeypatch.chdir(BENCH.parent)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="imports"):
        bench_versions.check_version(tmp_path / "empty")
