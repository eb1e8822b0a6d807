"""The benchmarks' child processes run the code under test: a checkout in the working directory
must not shadow the version a comparison names (bench_versions.py once timed one tree twice)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench_modules import BENCH, import_bench


@pytest.fixture(scope="module")
def bench_versions():
    return import_bench("bench_versions")[0]


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
