"""Native handlers on the event API and .olg library modules: what a P2 runtime hard-codes."""
