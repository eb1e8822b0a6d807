"""`python -m cortex_core ...`: the CLI, for programs that run it with a given interpreter."""

from cortex_cli.cli import main
from cortex_cli.leave import leave

if __name__ == "__main__":
    leave(main())
