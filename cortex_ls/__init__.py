"""cortex-ls: the language server of Cortex — hovers, code lenses, custom requests and commands
over cortex_core, for VS Code, Neovim and any LSP client. Start it with `cortex-ls`."""

from cortex_core import __version__

__all__ = ["__version__"]
