"""The owner's ai settings."""
