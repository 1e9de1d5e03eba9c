"""The AI provider layer: four drivers on the vendors' official SDKs (openai, anthropic, gigachat,
openai_compatible), every byte through the guarded outbound transport, one retry policy along a
credential's backup chain. Pure Python: no models; reads settings (OUTBOUND_ALLOW_LOOPBACK through the
address policy, optional AI_PROVIDER_DEADLINE_SECONDS, default 60).

    from apps.ai.providers import ChatMessage, ProviderConfig, complete

    chain = [ProviderConfig("openai", api_key=key, credential_id=1),
             ProviderConfig("gigachat", api_key=auth_key, credential_id=2, options={"scope": "GIGACHAT_API_PERS"})]
    answer = complete(chain, [ChatMessage("user", "Hello")], deadline=time.monotonic() + 45, max_operations=10)
    answer.text, answer.provider, answer.fallback_used, len(answer.attempts)

Capabilities (product-decisions.md "AI providers"): chat and the models list on all four drivers;
embeddings on openai, gigachat and openai_compatible; speech (transcription, synthesis) on openai.

Failures raise `ProviderError` (`kind`, `status`, `retry_after`, `attempts`, `exhausted`); the chain
moves on only after transport errors, timeouts, 429 and 5xx. An answer no reader can use (the wrong
shape, JSON too deep, a 2xx carrying only an error, a body over the cap once decompressed) is such a
failure too. See `calls` for the policy, `transport` for the guard and budget, `answers` for reading
every answer, `drivers` for the SDK wiring, and `tests.llm_fake` for loopback fakes.
"""

from .calls import acomplete as acomplete
from .calls import check_base_url as check_base_url
from .calls import complete as complete
from .calls import embed as embed
from .calls import list_models as list_models
from .calls import synthesize as synthesize
from .calls import transcribe as transcribe
from .drivers import clear_token_cache as clear_token_cache
from .drivers import endpoint_of as endpoint_of
from .drivers import load_sdks as load_sdks
from .types import PROVIDERS as PROVIDERS
from .types import AttemptInfo as AttemptInfo
from .types import ChatMessage as ChatMessage
from .types import Completion as Completion
from .types import ProviderConfig as ProviderConfig
from .types import ProviderError as ProviderError
from .types import can_embed as can_embed
from .types import can_speak as can_speak

__all__ = [
    "PROVIDERS",
    "AttemptInfo",
    "ChatMessage",
    "Completion",
    "ProviderConfig",
    "ProviderError",
    "acomplete",
    "can_embed",
    "can_speak",
    "check_base_url",
    "clear_token_cache",
    "complete",
    "embed",
    "list_models",
    "load_sdks",
    "synthesize",
    "transcribe",
]
