"""Where a model from the hub is looked for on disk, without importing huggingface_hub.

A run whose model was never downloaded asked huggingface_hub to say so, and importing it cost
every offline index update about 0.6 s. The cache folder is now found as huggingface_hub's own
constants place it; these tests hold that place to the library's, variable by variable, in real
child processes (its constants are read once, at import).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_core.memory.embeddings import local_model_path

NAME = "someone/some-model"

_PLACES = """
import json, os
from cortex_core.memory.embeddings import _hub_cache_repo
from huggingface_hub import constants
from pathlib import Path
# snapshot_download's own cache_dir: Path(constants.HF_HUB_CACHE).expanduser().resolve()
print(json.dumps([str(_hub_cache_repo("someone/some-model")),
                  os.path.join(Path(constants.HF_HUB_CACHE).expanduser().resolve(),
                               "models--someone--some-model")]))
"""


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME",
                        "HF_HUB_OFFLINE")}
    env.update(HOME=str(tmp_path / "home"), **extra)
    return env


@pytest.mark.parametrize("variables", [
    {},
    {"XDG_CACHE_HOME": "{t}/xdg"},
    {"HF_HOME": "{t}/hf"},
    {"HF_HOME": "~/hf-in-home"},
    {"HF_HOME": "$SOMEWHERE/hf", "SOMEWHERE": "{t}/var"},
    {"HF_HOME": "{t}/hf", "XDG_CACHE_HOME": "{t}/xdg"},
    {"HUGGINGFACE_HUB_CACHE": "{t}/legacy"},
    {"HUGGINGFACE_HUB_CACHE": "~/legacy", "HF_HOME": "{t}/hf"},
    {"HF_HUB_CACHE": "{t}/hub", "HUGGINGFACE_HUB_CACHE": "{t}/legacy", "HF_HOME": "{t}/hf"},
    {"HF_HUB_CACHE": "$SOMEWHERE/hub", "SOMEWHERE": "{t}/var"},
    {"HF_HUB_CACHE": "$SOMEWHERE", "SOMEWHERE": "~/hub-from-a-variable"},
    {"HUGGINGFACE_HUB_CACHE": "$SOMEWHERE", "SOMEWHERE": "~/legacy-from-a-variable"},
    {"HF_HUB_CACHE": "{t}/missing/../hub"},
    {"HF_HUB_CACHE": "relative/hub"},
])
def test_the_cache_folder_is_where_huggingface_hub_puts_it(tmp_path: Path, variables):
    env = _clean_env(tmp_path, **{k: v.format(t=tmp_path) for k, v in variables.items()})
    out = subprocess.run([sys.executable, "-c", _PLACES], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    ours, theirs = json.loads(out)
    assert ours == theirs


def _download(hub: Path, ref: str = "abc123") -> Path:
    """A hub cache entry for NAME as snapshot_download leaves it."""
    repo = hub / "models--someone--some-model"
    snapshot = repo / "snapshots" / ref
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(ref)
    return snapshot


def test_a_downloaded_model_is_found_under_the_legacy_variable(tmp_path: Path, monkeypatch):
    for key in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "legacy"))
    snapshot = _download(tmp_path / "legacy")
    assert local_model_path(NAME) == snapshot


def test_a_model_under_a_home_that_a_variable_names_is_found(tmp_path: Path, monkeypatch):
    """HF_HUB_CACHE=$CACHE with CACHE=~/hf: huggingface_hub expands the `~` that the variable
    brought in (snapshot_download's expanduser), and finds the model there; so must the shortcut,
    rather than say it was never downloaded."""
    for key in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CACHE", "~/hf")
    monkeypatch.setenv("HF_HUB_CACHE", "$CACHE")
    snapshot = _download(tmp_path / "home" / "hf")
    assert local_model_path(NAME) == snapshot
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "missing" / ".." / "home" / "hf"))
    assert local_model_path(NAME) == snapshot


_NOT_THERE = """
import sys
from cortex_core.memory.embeddings import ModelUnavailable, model_fingerprint

try:
    model_fingerprint("someone/some-model")
except ModelUnavailable as exc:
    print(exc)
print("imported" if "huggingface_hub" in sys.modules else "not imported")
"""


def test_a_model_never_downloaded_is_said_without_importing_the_hub(tmp_path: Path):
    env = _clean_env(tmp_path, HF_HOME=str(tmp_path / "hf"))
    out = subprocess.run([sys.executable, "-c", _NOT_THERE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    assert out == [f"model {NAME} is not downloaded (offline); run `cortex model pull {NAME}` "
                   "once, online", "not imported"]


def test_a_ref_without_its_snapshot_is_left_to_huggingface_hub(tmp_path: Path):
    """A `refs/main` whose snapshot is gone (an interrupted download, a cleaned cache): not for
    this shortcut to judge; the library is asked, and its answer (here: not there) given."""
    repo = tmp_path / "hf" / "hub" / "models--someone--some-model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    env = _clean_env(tmp_path, HF_HOME=str(tmp_path / "hf"))
    out = subprocess.run([sys.executable, "-c", _NOT_THERE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    assert out[-1] == "imported" and "not downloaded" in out[0]
