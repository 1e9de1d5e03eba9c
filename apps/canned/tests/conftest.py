import itertools

import pytest

_keys = itertools.count()


@pytest.fixture
def idem():
    def make() -> dict:
        return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"canned-{next(_keys)}"}

    return make
