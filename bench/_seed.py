"""Seed the benchmark data set: `DATABASE_URL=postgres://... BENCH_SCALE=1.0 python bench/_seed.py`.

Named with a leading underscore so `make bench` does not run it as a benchmark; every benchmark
seeds on its first run anyway (see bench/lib/seed.py for the data set).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.seed import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
