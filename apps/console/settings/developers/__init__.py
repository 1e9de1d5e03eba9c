"""The owner's developers settings."""
