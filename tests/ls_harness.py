"""A real cortex-ls over stdio, driven by pytest-lsp's client, with what the server sent recorded.

Waits are on events (notifications, requests from the server), never on sleeps.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

WAIT = 60.0   # seconds: a protocol mistake shows up as a hang; fail it with a message

CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "cortex_ls"] + (["-vv", "--log-file", os.environ["CORTEX_LS_LOG"]] if os.environ.get("CORTEX_LS_LOG") else []),
    # server_env replaces the environment: keep PATH and the rest. No embedding model: the tests
    # run offline, and semantic search is covered in cortex_core's tests.
    server_env=dict(os.environ, CORTEX_MODEL="none"))


async def finish(client: LanguageClient) -> None:
    """A client fixture's teardown: shut a started server down; kill one that was never
    initialized or does not answer. pytest-lsp's own teardown waits for the server to exit,
    which one that never got `exit` does not: a test failing before `start` would hang there."""
    server = client._server
    if getattr(client, "cortex_started", False) and server and server.returncode is None:
        try:
            await asyncio.wait_for(client.shutdown_session(), 15)
        except Exception:   # noqa: BLE001
            pass                # a hung server: its test has failed already; do not hang here
    if server is not None and server.returncode is None:
        server.kill()


class Session:
    """The client plus the server's notifications and requests, as counted events."""

    def __init__(self, client: LanguageClient):
        self.client = client
        self.updates: list[dict] = []
        self.statuses: list[dict] = []
        self.refreshes = 0
        self.registrations: list = []
        self._changed = asyncio.Condition()

        @client.feature("cortex/indexUpdated")
        async def _updated(params):
            self.updates.append(params)
            await self._bump()

        @client.feature("cortex/indexStatus")
        async def _status(params):
            self.statuses.append(params)
            await self._bump()

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        async def _refresh(params):
            self.refreshes += 1
            await self._bump()

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params):
            self.registrations.append(params)

    async def _bump(self):
        async with self._changed:
            self._changed.notify_all()

    async def until(self, check, what: str, timeout: float = WAIT):
        """Wait until `check()` holds, re-checked at every notification from the server."""
        async def loop():
            async with self._changed:
                await self._changed.wait_for(check)
        try:
            await asyncio.wait_for(loop(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    async def start(self, *folders: Path, caps: str = "visual-studio-code",
                    options: dict | None = None, encodings: list[str] | None = None,
                    wait_index: bool = True):
        capabilities = client_capabilities(caps)
        if encodings is not None:
            capabilities.general = types.GeneralClientCapabilities(position_encodings=encodings)
        await self.client.initialize_session(types.InitializeParams(
            capabilities=capabilities,
            root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name)
                               for f in folders] or None,
            initialization_options=options))
        self.client.cortex_started = True
        if wait_index:
            await self.indexed(len(folders))

    async def indexed(self, count: int = 1):
        await self.until(lambda: len(self.updates) >= count, f"{count} index runs to finish")

    # -- requests ---------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None, language: str = "python") -> str:
        uri = path.as_uri()
        if text is None:
            text = path.read_text(encoding="utf-8")
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
        return uri

    async def hover(self, uri: str, line: int, character: int) -> str | None:
        result = await self.client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(line, character)))
        return result.contents.value if result is not None else None

    async def lenses(self, uri: str):
        return await self.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri)))

    async def request(self, method: str, params):
        return await self.client.protocol.send_request_async(method, params)

    async def raw_request(self, method: str, params):
        """A request sent as given, without the client's type checks (to send bad params)."""
        from concurrent.futures import Future
        from pygls.protocol import JsonRPCRequestMessage
        proto = self.client.protocol
        msg_id = str(uuid.uuid4())
        future: Future = Future()
        proto._request_futures[msg_id] = future
        proto._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params,
                                               jsonrpc="2.0"))
        return await asyncio.wrap_future(future)

    async def command(self, name: str, *args):
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args)))


def plain(value):
    """pygls' client hands results back as namedtuples ("Object"): as dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
