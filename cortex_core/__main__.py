"""`python -m cortex_core ...`: the CLI, for programs that run it with a given interpreter.
`python -m cortex_core --spare`: a spare indexer that waits for its arguments on stdin
(cortex_cli/spare.py), started ahead of time by the language server."""

import sys

from cortex_cli.leave import leave

if __name__ == "__main__":
    argv = None
    if sys.argv[1:] == ["--spare"]:
        from cortex_cli.spare import arguments
        argv = arguments()
        if argv is None:
            leave(0)
    from cortex_cli.cli import main
    leave(main(argv))
