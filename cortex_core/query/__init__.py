"""Analyses, one question each, answered from the store: targets (`PATH::SYMBOL`, `PATH:LINE`),
history, blame, hotspots, co-change, blast radius, related commits, what the index holds, and
what the working tree changes."""
