"""What the AI configuration views share."""

MERGE_NOTE = "PATCH is merge-safe: members not sent keep their values."
