"""Command line of the language server: `cortex-ls [--tcp --host H --port P] [--log-file F]`."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from cortex_core import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cortex-ls", description="The Cortex language server. Editors start it and talk "
        "LSP over stdin/stdout; --tcp serves one client on a port instead.",
        epilog="Settings come from the client (initializationOptions, workspace/"
        "didChangeConfiguration); the protocol is in docs/protocol.md.")
    parser.add_argument("--version", action="version", version=f"cortex-ls {__version__}")
    parser.add_argument("--stdio", action="store_true",
                        help="serve over stdin/stdout (the default; accepted because LSP clients "
                        "such as vscode-languageclient pass it)")
    parser.add_argument("--tcp", action="store_true", help="serve over TCP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default: 2087)")
    parser.add_argument("--log-file", metavar="FILE", help="write the log here (default: stderr)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log: -v info, -vv debug (debug logs every message)")
    return parser


def _stdout_for_protocol():
    """The real stdout for LSP messages; fd 1 then points at stderr, so that a stray print, a
    C library or a child process can never write into the protocol stream."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=0)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    handler = logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file \
        else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # pygls logs every message body at INFO: keep it out of an info log.
    logging.getLogger("pygls").setLevel(max(level, logging.WARNING) if args.verbose < 2
                                        else logging.DEBUG)
    # pygls logs every failed request with a traceback, expected ones included (an unknown
    # symbol, a cancelled request): the server logs its real errors itself.
    if args.verbose < 2:
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
    from cortex_ls.features import register
    from cortex_ls.server import CortexServer
    server = register(CortexServer())
    try:
        if args.tcp:
            server.start_tcp(args.host, args.port)
        else:
            server.start_io(sys.stdin.buffer, _stdout_for_protocol())
    finally:
        server.kill_children()
    return 0
