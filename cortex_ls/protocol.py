"""pygls' protocol, adjusted where its defaults would fail an editor.

- A request whose params do not fit the method's type is answered with InvalidParams. pygls fails
  while decoding such a message, before it knows where to answer, so the client would wait
  forever and the user would see "Error in server". Requests after `shutdown` are answered with
  InvalidRequest (pygls drops them).
- Custom requests (`cortex/...`) and command arguments arrive as plain dicts, not namedtuples
  (which pygls would serialise back as JSON lists).
- Open documents are kept by the server (cortex_ls.documents), not by pygls' workspace: its line
  splitting counts form feeds and other separators that LSP does not, so edits would land on the
  wrong lines.
"""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import (JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol,
                            default_converter)
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)


def raw_json_converter():
    conv = default_converter()
    conv.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return conv


class _Invalid:
    """A request whose params did not decode. The decoding hook runs on nested objects too, so
    the answer waits for handle_message, which sees only the message itself: an object inside
    params that merely looks like a request is never answered."""
    jsonrpc = "invalid"

    def __init__(self, msg_id, method, error: str):
        self.id, self.method, self.error = msg_id, method, error


class CortexProtocol(LanguageServerProtocol):

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except Exception as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__ or exc
                log.warning("invalid params for %s: %s", data.get("method"), cause)
                return _Invalid(data["id"], data.get("method"), _short(cause))
            raise

    def handle_message(self, message):
        if isinstance(message, _Invalid):
            error = JsonRpcInvalidParams(f"invalid params for {str(message.method)[:100]!r}: "
                                         f"{message.error}")
            self._send_response(message.id, error=error.to_response_error())
            return
        if self._shutdown and getattr(message, "method", types.EXIT) != types.EXIT \
                and getattr(message, "id", None) is not None:
            # pygls drops requests after shutdown silently; the client would wait forever.
            self._send_response(message.id, error=JsonRpcInvalidRequest(
                "the server is shutting down").to_response_error())
            return
        super().handle_message(message)

    # -- documents: kept by the server; only the user handlers run ------------------------

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
