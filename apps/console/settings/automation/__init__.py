"""The owner's automation settings."""
