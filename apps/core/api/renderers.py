from rest_framework.renderers import JSONRenderer


class APIJSONRenderer(JSONRenderer):
    """UTF-8 JSON (no ASCII escaping: Russian console strings stay readable)."""

    ensure_ascii = False
    charset = None


class ProblemJSONRenderer(APIJSONRenderer):
    media_type = "application/problem+json"
