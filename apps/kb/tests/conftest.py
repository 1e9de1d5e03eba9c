"""Fixtures of the knowledge-base tests."""

import itertools

import pytest

from apps.kb import hooks, index
from apps.kb.testing import OfflineHooks

_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"kb-key-{next(_keys)}"}


@pytest.fixture(autouse=True)
def _fresh_cache():
    index.clear_cache()
    yield
    index.clear_cache()


@pytest.fixture
def offline():
    """The deterministic offline embedder in place of the AI app's credentials."""
    with hooks.use_hooks(OfflineHooks()) as installed:
        yield installed


@pytest.fixture
def kb(api):
    return api(["kb:read", "kb:write"])


from tests.llm_fake import e5, e5_server, llm_fake  # noqa: F401,E402 (the fixtures)
