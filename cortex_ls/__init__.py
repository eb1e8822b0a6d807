"""cortex-ls: the language server (a thin pygls adapter over cortex_core). Not built yet."""
