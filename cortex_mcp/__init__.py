"""cortex mcp: the repository's memory for chat agents, over the Model Context Protocol.

A thin front end like cortex_ls: each tool finds the repository, calls cortex_core, and renders
the typed result as compact markdown (an agent's context is precious) with the same data as
structured content. No SQL and no ranking here."""
