"""Settings of the measured server: the project's own, plus the floor views under /bench/.

Started by bench.lib.common.Server with APP_MODE=development and DEBUG=0 in the environment
(DEBUG would record every query and slow both sides). Never used outside the benchmarks.
"""

from config.settings import *  # noqa: F403

DEBUG = False
ROOT_URLCONF = "bench.lib.urls"
