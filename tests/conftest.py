from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import pytest_lsp  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

from ls_harness import CONFIG, Session, finish  # noqa: E402
from scripted_repo import ScriptedRepo  # noqa: E402

from cortex_core.config import Settings  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402
from cortex_core.store.store import open_reader  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path) -> ScriptedRepo:
    return ScriptedRepo(tmp_path / "repo")


class Indexed:
    """Index a scripted repository and query it, the way the CLI does."""

    def __init__(self, repo: ScriptedRepo, db: Path):
        self.repo = repo
        self.db = db

    def index(self, settings: Settings | None = None, **kwargs):
        return index_repository(self.repo.path, self.db, settings or Settings(), **kwargs)

    def reader(self):
        return open_reader(self.db)


@pytest.fixture
def cortex(repo: ScriptedRepo, tmp_path: Path) -> Indexed:
    return Indexed(repo, tmp_path / "index" / "cortex.db")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """A real model2vec model with a topic-shaped vocabulary (see tiny_model.py), as a folder."""
    from tiny_model import build_tiny_model
    return str(build_tiny_model(tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="session")
def other_tiny_model(tmp_path_factory) -> str:
    """Another model, of another width: switching to it must re-embed everything."""
    from tiny_model import build_tiny_model
    return str(build_tiny_model(tmp_path_factory.mktemp("models") / "other", dim=8, seed=3))


@pytest.fixture(scope="session")
def tiny_wordpiece_model(tmp_path_factory) -> str:
    """A model with BERT's tokenization (tiny_model.py), whose vocabulary the store can keep."""
    from tiny_model import build_tiny_wordpiece_model
    return str(build_tiny_wordpiece_model(tmp_path_factory.mktemp("models") / "wordpiece"))


# A real language server over stdio, one per test that asks for `client` or `lsp` (a test file
# may define its own `client` with another configuration).
@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient):
    # pytest-lsp hands the test its client whatever the fixture yields: the session is built on
    # it by the next fixture, before the server is initialized.
    yield
    await finish(lsp_client)


@pytest.fixture
def lsp(client: LanguageClient) -> Session:
    return Session(client)
