"""The owner's people settings."""
