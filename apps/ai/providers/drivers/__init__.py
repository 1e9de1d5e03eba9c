"""The four drivers on the vendors' official SDKs, every SDK on the guarded transport, every SDK
retry off (the chain in `calls` is the one retry policy), and the classification of their failures.

Each driver operation runs through `_Call.timed` / `_Call.atimed`, which records one `AttemptInfo`
per provider HTTP operation and turns any failure into a `ProviderError` whose text carries no
secret and no peer-supplied text. Answers are taken raw from the OpenAI and Anthropic SDKs (the
GigaChat SDK's validated models as data) and read by `answers`, never by attribute access on an
SDK's unvalidated objects.

One module per job: `sdks` (imported on first use), `defaults`, `classification`, `attempts`,
`clients`, `gigachat_token`, `payloads` and `operations`. Callers import from this package.
"""

from .classification import classify as classify
from .classification import kind_for_status as kind_for_status
from .clients import VENDOR_BASE_URLS as VENDOR_BASE_URLS
from .clients import endpoint_of as endpoint_of
from .defaults import ANTHROPIC_BASE_URL as ANTHROPIC_BASE_URL
from .defaults import ANTHROPIC_DEFAULT_MAX_TOKENS as ANTHROPIC_DEFAULT_MAX_TOKENS
from .defaults import DEFAULT_EMBEDDING_MODELS as DEFAULT_EMBEDDING_MODELS
from .defaults import DEFAULT_MODELS as DEFAULT_MODELS
from .defaults import DEFAULT_SPEECH_MODEL as DEFAULT_SPEECH_MODEL
from .defaults import DEFAULT_TRANSCRIPTION_MODEL as DEFAULT_TRANSCRIPTION_MODEL
from .defaults import DEFAULT_VOICE as DEFAULT_VOICE
from .defaults import GIGACHAT_AUTH_URL as GIGACHAT_AUTH_URL
from .defaults import GIGACHAT_BASE_URL as GIGACHAT_BASE_URL
from .defaults import GIGACHAT_SCOPE as GIGACHAT_SCOPE
from .defaults import OPENAI_BASE_URL as OPENAI_BASE_URL
from .defaults import TOKEN_EXPIRY_BUFFER_SECONDS as TOKEN_EXPIRY_BUFFER_SECONDS
from .gigachat_token import clear_token_cache as clear_token_cache
from .gigachat_token import forget_token as forget_token
from .operations import achat as achat
from .operations import chat as chat
from .operations import embed as embed
from .operations import list_models as list_models
from .operations import synthesize as synthesize
from .operations import transcribe as transcribe
from .payloads import check_provider as check_provider
from .sdks import anthropic as anthropic
from .sdks import load_sdks as load_sdks
from .sdks import openai as openai
