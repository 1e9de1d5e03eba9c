"""The owner's widget settings."""
