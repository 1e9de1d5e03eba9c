"""Statistics facts (per-day rollups maintained by the chat services)."""
