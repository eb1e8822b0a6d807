"""The VS Code extension end to end: the packaged cortex.vsix in a real VS Code (code-server 4.100.3),
driven by Debian's Chromium through playwright-core (editors/vscode/e2e/run.js).

Needs `bash editors/vscode/scripts/ci-setup.sh` first (apt packages, code-server, the .vsix);
runs only with CORTEX_E2E_VSCODE=1:  CORTEX_E2E_VSCODE=1 python -m pytest -m vscode
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

pytestmark = [
    pytest.mark.vscode,
    pytest.mark.skipif(os.environ.get("CORTEX_E2E_VSCODE") != "1",
                       reason="VS Code e2e: set CORTEX_E2E_VSCODE=1 (after editors/vscode/scripts/ci-setup.sh)"),
]

EXT = Path(__file__).resolve().parent.parent / "editors" / "vscode"
CACHE = Path(os.environ.get("CORTEX_E2E_CACHE", EXT / ".e2e"))
CODE_SERVER = CACHE / "node_modules" / ".bin" / "code-server"
VSIX = EXT / "cortex.vsix"

USE = sample_use("core")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"code-server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("code-server did not listen")


@pytest.fixture
def workspace(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    repo.write("core.py", sample_core(n=1))
    repo.write("use.py", USE)
    repo.commit("add the core\n\nThe engine needs one place to compute values.", days_ago=30)
    for n, author in ((2, "Bob <bob@example.com>"), (3, "Ann <ann@example.com>"),
                      (4, "Bob <bob@example.com>")):
        repo.write("core.py", sample_core(n=n))
        repo.commit(f"tune compute to {n}\n\nCallers rely on compute growing by {n} now.",
                    author=author, days_ago=30 - n)
    repo.write("core.py", sample_core(n=5))
    repo.commit("speed up compute for the engine", days_ago=5)
    return repo


def _check_installed() -> str:
    for need, hint in ((CODE_SERVER, "code-server"), (VSIX, "cortex.vsix"),
                       (CACHE / "node_modules" / "playwright-core", "playwright-core")):
        assert need.exists(), f"{hint} missing: run editors/vscode/scripts/ci-setup.sh"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(chromium).exists(), "chromium missing: run editors/vscode/scripts/ci-setup.sh"
    return chromium


def _drive(workspace: ScriptedRepo, tmp_path: Path, python: str, mode: str) -> tuple[dict, str]:
    """Install the .vsix into a fresh code-server, open the workspace, run e2e/run.js in `mode`;
    its JSON result and a text to explain failures."""
    chromium = _check_installed()
    d = tmp_path / "cs"
    (d / "data" / "User").mkdir(parents=True)
    (d / "home").mkdir()
    env = dict(os.environ, CORTEX_MODEL="none", HOME=str(d / "home"),
               XDG_CONFIG_HOME=str(d / "home" / ".config"), XDG_DATA_HOME=str(d / "home" / ".local"))
    base = [str(CODE_SERVER), "--config", str(d / "config.yaml"), "--user-data-dir", str(d / "data"),
            "--extensions-dir", str(d / "ext")]
    subprocess.run(base + ["--install-extension", str(VSIX)], env=env, check=True,
                   capture_output=True, timeout=120)
    (d / "data" / "User" / "settings.json").write_text(json.dumps({
        "cortex.pythonPath": python,
        "cortex.model": "none",
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "editor.hover.delay": 100,
        "git.openRepositoryInParentFolders": "never",
    }))

    port = _free_port()
    log = open(d / "code-server.log", "w")
    proc = subprocess.Popen(base + ["--bind-addr", f"127.0.0.1:{port}", "--auth", "none",
                                    "--disable-telemetry", "--disable-update-check",
                                    "--disable-workspace-trust", str(workspace.path)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    screenshot = EXT / "e2e" / ("screenshot.png" if mode == "full" else f"screenshot-{mode}.png")
    started = time.monotonic()
    try:
        _wait_port(port, proc)
        run = subprocess.run(
            ["node", str(EXT / "e2e" / "run.js")], capture_output=True, text=True, timeout=240,
            env=dict(os.environ, CS_URL=f"http://127.0.0.1:{port}", WORKSPACE=str(workspace.path),
                     FILE="core.py", SYMBOL="compute", SCREENSHOT=str(screenshot),
                     E2E_CACHE=str(CACHE), CHROMIUM=chromium, MODE=mode))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    elapsed = time.monotonic() - started
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result from run.js\nstdout: {run.stdout}\nstderr: {run.stderr[-3000:]}"
    res = json.loads(lines[-1])
    detail = (f"result: {json.dumps(res, indent=1)[:6000]}\nstderr: {run.stderr[-2000:]}\n"
              f"code-server log: {(d / 'code-server.log').read_text(errors='replace')[-3000:]}\n"
              f"Cortex output: {''.join(p.read_text(errors='replace') for p in (d / 'data' / 'logs').glob('*/exthost*/*/Cortex.log'))[-4000:]}")
    print(f"vscode e2e: {elapsed:.1f} s; steps (ms): {res.get('steps')}")
    print(json.dumps({k: res.get(k) for k in ("lens", "hover", "notification", "historyPick",
                                              "blastPick", "relatedPick", "relatedChangesTitle",
                                              "relatedChangesPick", "diffTab", "noteMessage",
                                              "searchPick",
                                              "reindexMessage", "failure", "statusBar")}, indent=1))
    return res, detail


@pytest.mark.timeout(300)
def test_hover_lens_and_commands_in_code_server(workspace: ScriptedRepo, tmp_path: Path):
    res, detail = _drive(workspace, tmp_path, sys.executable, "full")
    assert res["ok"], detail
    screenshot = EXT / "e2e" / "screenshot.png"

    # the code lens of the hot function (5 changes in the window, threshold 4)
    assert "changed 5× in 90d" in res["lens"], detail
    # the hover: the function's name and the subjects of its commits
    assert "compute" in res["hover"], detail
    assert "speed up compute for the engine" in res["hover"], detail
    assert "tune compute to 4" in res["hover"], detail
    # the context pack reached the clipboard, and the message says its size
    assert res["notification"].startswith("Context pack copied: "), detail
    tokens = int(res["notification"].split(": ")[1].split(" ")[0])
    assert tokens > 0, detail
    assert "compute" in res["clipboard"], detail
    assert len(res["clipboard"]) > 100, detail
    # the lens opens the symbol's history (server command cortex.showHistory, shown as a QuickPick)
    assert any("speed up compute for the engine" in r and "5 days ago" in r for r in res["historyPick"]), detail
    assert len(res["historyPick"]) == 5, detail
    # choosing a commit of the history opens its diff of the file
    assert res["diffTab"].startswith("core.py ("), detail
    assert res["diffEditor"] >= 1, detail
    # Show Blast Radius lists the caller in use.py
    assert any("use.py::main" in r for r in res["blastPick"]), detail
    # What changes with compute: its callers and its file's other functions (the one commit
    # they share: the first), then the file that depends on it (a row: label, description, detail)
    assert any(r.startswith("use.py::main1 shared commit (weak) · caller last together: add the core")
               for r in res["relatedPick"]), detail
    assert any(r.startswith("use.py1 shared commit (weak) · dependent") for r in res["relatedPick"]), detail
    # An unsaved edit of core.py: what usually comes along with the working tree's changes
    assert "your 1 changed file" in (res["relatedChangesTitle"] or ""), detail
    assert any(r.startswith("use.py1 shared commit (weak) with core.py — last together")
               for r in res["relatedChangesPick"]), detail
    # Add Note, Search Memory, Reindex
    assert res["noteMessage"].startswith("Cortex: note #") and "compute" in res["noteMessage"], detail
    assert any("tune compute to" in r for r in res["searchPick"]), detail
    assert res["reindexMessage"].startswith("Cortex: reindexing 1 repository") or \
        "queued" in res["reindexMessage"], detail
    assert screenshot.exists() and screenshot.stat().st_size > 10_000, detail


@pytest.mark.timeout(300)
def test_server_that_cannot_start_says_how_to_install(workspace: ScriptedRepo, tmp_path: Path):
    # a real interpreter without cortex_ls
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    res, detail = _drive(workspace, tmp_path, str(bare / "bin" / "python"), "startFailure")
    assert res["ok"], detail
    assert "pip install cortex-memory" in res["failure"], detail
    assert "not running" in (res["statusBar"] or ""), detail
