"""Each line of stdin checked as a JSON-RPC 2.0 message before the MCP SDK reads it.

The SDK drops what it cannot parse or validate without an answer, and reads a request whose id
is not a string or an integer (null, an object, 1.5) as a notification: either way the client
waits forever for its answer. A line is checked here first, and one that is not a message gets
the error JSON-RPC prescribes: -32700 for what is not JSON, -32600 for what is not a request
(with its id when it has a valid one, else null; MCP has no batches). A line with half a
surrogate pair escaped (`"\\ud800"`, as a client that cut a string inside an emoji sends), which
the SDK's parser refuses, is passed on with U+FFFD in its place, as the language server reads its
clients' strings.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import mcp_types
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError

from cortex_core.text.sanitize import replace_surrogates

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    """The error answer to a line that is not a message."""
    id: str | int | None
    code: int
    message: str

    def answer(self) -> mcp_types.JSONRPCError:
        return mcp_types.JSONRPCError(jsonrpc="2.0", id=self.id, error=mcp_types.ErrorData(
            code=self.code, message=self.message))


# What Cortex serves and a client may not ask before its session is open (initialize and ping
# it may): the SDK answered these with a bare "Invalid request parameters", which sent client
# authors looking at their params. A method Cortex does not serve stays the SDK's -32601, before
# the handshake too (clients probe with it).
_SERVED = frozenset({"tools/list", "tools/call", "resources/list", "resources/read",
                     "resources/templates/list", "prompts/list", "prompts/get"})


_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


def checked(line: str, *, initialized: bool = True) -> str | Refusal | None:
    """The line for the SDK (repaired), the error to answer it with, or None: nothing to pass
    on or answer (a blank line; a malformed response or notification, which JSON-RPC never
    answers). Until `initialized`, a request the server serves is refused with why."""
    if not line.strip():
        return None
    try:
        data = json.loads(line, parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:
        return _parse_error(exc)
    if not isinstance(data, dict):
        return Refusal(None, INVALID_REQUEST, _not_an_object(data))
    # A response (to a request of this server's) is never answered, even a malformed one: an
    # answer to an answer could go back and forth.
    if "method" in data or not ("result" in data or "error" in data):
        refusal = _envelope(data)
        if refusal is not None:
            return refusal
        if not initialized and "id" in data and data["method"] in _SERVED \
                and not _modern(data.get("params")):
            return Refusal(data["id"], INVALID_REQUEST,
                           f'Invalid Request: "{data["method"]}" before "initialize": a session '
                           'starts with an "initialize" request, then the '
                           '"notifications/initialized" notification (or, from protocol '
                           f'2026-07-28 on, each request carries "{_VERSION_KEY}" in "_meta")')
    try:
        fixed = _no_lone_surrogates(data)
        if fixed != data:
            line = json.dumps(fixed)
    except RecursionError as exc:
        return _parse_error(exc)
    return _as_the_sdk_reads(line, data)


def opens_session(line: str) -> bool:
    """Whether a line that `checked` passed opens the session as the SDK counts it: the
    "initialize" request, a bare "notifications/initialized", or a request of the protocol
    without a handshake (after which the SDK answers for the connection itself). Counted when
    passed on, not when the SDK accepts it: after an "initialize" it refused, its own error
    comes back."""
    try:
        data = json.loads(line)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    method = data.get("method")
    return (method == "initialize" and "id" in data) or (
        method == "notifications/initialized" and "id" not in data) or (
        "id" in data and _modern(data.get("params")))


def _modern(params) -> bool:
    """A request of the protocol without a handshake (2026-07-28 on): each carries its
    version in `_meta`, and the SDK serves it without an "initialize"."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and _VERSION_KEY in meta


def _envelope(data: dict) -> Refusal | None:
    """What JSON-RPC requires of a request's or notification's members, which the SDK reads
    otherwise."""
    has_id = "id" in data
    request_id = data.get("id")
    valid_id = isinstance(request_id, str) or (isinstance(request_id, int)
                                               and not isinstance(request_id, bool))
    answer_id = request_id if valid_id else None
    if data.get("jsonrpc") != "2.0":
        return Refusal(answer_id, INVALID_REQUEST,
                       'Invalid Request: "jsonrpc" must be "2.0"')
    if has_id and not valid_id:
        return Refusal(None, INVALID_REQUEST, "Invalid Request: \"id\" must be a string or an "
                       f"integer, not {_kind(request_id)}")
    if "method" not in data:
        return Refusal(answer_id, INVALID_REQUEST, 'Invalid Request: no "method"')
    if not isinstance(data["method"], str):
        return Refusal(answer_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    params = data.get("params", {})
    if isinstance(params, list) and has_id:   # JSON-RPC allows it; MCP names every parameter
        return Refusal(answer_id, INVALID_PARAMS, 'Invalid params: "params" must be an object')
    if not isinstance(params, (dict, list)):
        return Refusal(answer_id, INVALID_REQUEST,
                       f'Invalid Request: "params" must be an object, not {_kind(params)}')
    return None


def _as_the_sdk_reads(line: str, data: dict) -> str | Refusal | None:
    """The line, if the SDK takes it as a message; else the error to answer it with."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        kind = _kind_of_message(data)
        if kind == "JSONRPCRequest":
            return Refusal(data["id"], INVALID_REQUEST, f"Invalid Request: {_first(exc, kind)}")
        # Not answered (a notification, a response): said where the server's log goes.
        log.warning("ignored a malformed %s: %s", "notification" if "method" in data
                    else "response", _first(exc, kind))
        return None
    return line


def _kind_of_message(data: dict) -> str:
    """The SDK's type for what the message means to be (its errors are per type tried)."""
    if "method" in data:
        return "JSONRPCRequest" if "id" in data else "JSONRPCNotification"
    return "JSONRPCResponse" if "result" in data else "JSONRPCError"


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")


def _parse_error(exc: Exception) -> Refusal:
    if isinstance(exc, RecursionError):
        return Refusal(None, PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    return Refusal(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")


def _not_an_object(data) -> str:
    if isinstance(data, list):
        return ("Invalid Request: a batch (a JSON array) is not supported by MCP; send one "
                "message, a JSON object, per line")
    return f"Invalid Request: a message is a JSON object, not {_kind(data)}"


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _first(exc: ValidationError, kind: str) -> str:
    """The SDK's first complaint about the message as `kind`, in one line, without pydantic's
    URL."""
    errors = exc.errors(include_url=False)
    error = next((e for e in errors if e["loc"][:1] == (kind,)), errors[0])
    where = ".".join(str(part) for part in error["loc"][1:])   # [0]: the type tried
    return f"{where}: {error['msg']}" if where else error["msg"]


def _no_lone_surrogates(value):
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, list):
        return [_no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_lone_surrogates(k): _no_lone_surrogates(v) for k, v in value.items()}
    return value
