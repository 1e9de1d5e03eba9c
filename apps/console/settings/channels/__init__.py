"""The owner's channels settings."""
