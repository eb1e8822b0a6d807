"""Composed features, several analyses for one purpose: an editor's hover card and code lenses,
`cortex what`, context packs under a token budget, briefings (the MCP server's prompts), and
token counts the way an agent's model counts them."""
