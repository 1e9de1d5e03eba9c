"""The owner's data settings."""
