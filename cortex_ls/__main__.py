"""`python -m cortex_ls`: the language server over stdio (see `--help`)."""

import sys

from cortex_ls.cli import main

if __name__ == "__main__":
    sys.exit(main())
