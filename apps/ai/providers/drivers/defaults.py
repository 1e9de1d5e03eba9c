"""The vendors' base URLs and default models, and the internal error of a spent operation budget."""

from __future__ import annotations

import gigachat
import gigachat.api.auth
import gigachat.exceptions
import gigachat.settings

from ..types import ANTHROPIC, GIGACHAT, OPENAI, ProviderError

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
GIGACHAT_BASE_URL = gigachat.settings.BASE_URL
GIGACHAT_AUTH_URL = gigachat.settings.AUTH_URL
GIGACHAT_SCOPE = gigachat.settings.SCOPE

DEFAULT_MODELS = {OPENAI: "gpt-4o-mini", ANTHROPIC: "claude-sonnet-5-5", GIGACHAT: "GigaChat"}
DEFAULT_EMBEDDING_MODELS = {OPENAI: "text-embedding-3-small", GIGACHAT: "Embeddings"}
DEFAULT_TRANSCRIPTION_MODEL = "whisper-1"
DEFAULT_SPEECH_MODEL = "gpt-4o-mini-tts"
DEFAULT_VOICE = "alloy"
ANTHROPIC_DEFAULT_MAX_TOKENS = 1024
# A GigaChat access token is refreshed this long before it lapses (the SDK's own buffer).
TOKEN_EXPIRY_BUFFER_SECONDS = 60.0


class _OperationsSpent(ProviderError):
    """Internal: the operation budget ran out before anything was sent (no attempt recorded)."""

    def __init__(self, provider: str | None) -> None:
        super().__init__("timeout", provider=provider, exhausted="operations", detail="operations_exhausted")
