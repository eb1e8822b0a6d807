"""cortex: the command line of Cortex — one command per engine call, its terminal rendering
(`render.py`) and the git hooks installer (`hooks.py`). A front end beside cortex_ls and
cortex_mcp; `python -m cortex_core ...` (what installed hooks run) lands here too."""
