from tests.llm_fake import llm_fake  # noqa: F401 (the fixture)
