"""OpenAPI for the compat routes: no bearer token (authentication path 4, a secret in the path),
no scopes, no idempotency key; the errors each route states."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from apps.core.api.schema import PROBLEM_TITLES, PathParameterHelp


class CompatAutoSchema(PathParameterHelp, AutoSchema):
    def get_auth(self):
        return []

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        operation["security"] = []
        operation["x-scopes"] = []
        operation["x-auth"] = "path-secret"
        operation["x-idempotency"] = "none"
        operation["tags"] = ["compat"]
        # Errors are problem+json like everywhere else (the shared component per status).
        for code in list(operation.get("responses", {})):
            if code[0] == "4" and int(code) in PROBLEM_TITLES:
                operation["responses"][code] = {"$ref": f"#/components/responses/Problem{code}"}
        return operation


def compat_schema(**kwargs):
    """`extend_schema` on a compat view's method, with CompatAutoSchema as its base (extend_schema
    otherwise builds on the project's default, token-scoped schema class)."""
    from drf_spectacular.utils import extend_schema

    def decorate(method):
        method.schema = CompatAutoSchema
        return extend_schema(**kwargs)(method)

    return decorate
