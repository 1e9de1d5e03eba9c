from apps.ai.testing import llm_fake  # noqa: F401 (the fixture)
