"""Settings of the measured server: the project's own, plus the floor views under /bench/.

Started by bench.lib.common.Server with APP_MODE=development and DEBUG=0 in the environment
(DEBUG would record every query and slow both sides). Never used outside the benchmarks: the floor
views are in bench.lib.urls only (config.urls, the production URL conf, has none of them), and these
settings refuse to load in production mode.
"""

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F403
from config.settings import PRODUCTION

if PRODUCTION:
    raise ImproperlyConfigured("bench.lib.settings serves unauthenticated floor views: never with APP_MODE=production")

DEBUG = False
ROOT_URLCONF = "bench.lib.urls"
