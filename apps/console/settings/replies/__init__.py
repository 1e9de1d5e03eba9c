"""The owner's replies settings."""
