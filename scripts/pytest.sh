#!/usr/bin/env bash
# `make test`: the whole suite with the venv's pytest. Uses DATABASE_URL / REDIS_URL when they are
# set, the embedded default otherwise. pytest's own summary stays the last line it prints on success;
# exit 5 (no test collected) is a failure, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."

.venv/bin/pytest "$@"
rc=$?
if [[ $rc -eq 5 ]]; then
  echo "make test: pytest collected no test (exit 5): that is a failure" >&2
fi
exit $rc
