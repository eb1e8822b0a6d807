"""`python -m cortex_core ...`: the CLI, for programs that run it with a given interpreter."""

import sys

from cortex_cli.cli import main

if __name__ == "__main__":
    sys.exit(main())
