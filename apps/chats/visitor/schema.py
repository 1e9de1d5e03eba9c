"""OpenAPI of the visitor API (tag `visitor`, security scheme `Visitor`): what the embed script
speaks under /api/visitor/v1/{button_guid}/. No bearer token, no scopes, no idempotency keys: a
route that needs the visitor's session says so with the `Visitor` scheme (declared in
SPECTACULAR_SETTINGS); its problem answers are listed per route."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from apps.core.api.schema import DescribedAutoSchema

TAG = "visitor"


class VisitorAutoSchema(DescribedAutoSchema):
    def get_tags(self) -> list[str]:
        return [TAG]

    def get_operation_id(self) -> str:
        return "visitor_" + super().get_operation_id().removeprefix("api_visitor_v1_")

    def _get_serializer_name(self, serializer, direction, bypass_extensions=False) -> str:
        # Visitor inputs share class names with the bearer API's (`MessageInput`, `TypingInput`).
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        if type(serializer).__module__.startswith("apps.chats.visitor") and not name.startswith("Visitor"):
            name = f"Visitor{name}"
        return name

    def get_auth(self):
        return [{"Visitor": []}] if getattr(self.view, "session_required", True) else []

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        # Explicitly public: no top-level security applies to a route without a session.
        operation.setdefault("security", [])
        statuses = {404, 429, 500}  # 404: no widget has this button_guid
        if getattr(self.view, "session_required", True):
            statuses.add(401)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses |= {400, 413, 415, 422}
        if self.method == "GET" and "after_id" in str(operation.get("parameters", "")):
            statuses.add(422)
        statuses |= set(getattr(self.view, "problem_statuses", {}).get(self.method.lower(), ()))
        responses = operation.setdefault("responses", {})
        for status in sorted(statuses):
            responses.setdefault(str(status), {"$ref": f"#/components/responses/Problem{status}"})
        return operation


def visitor_operation(**kwargs):
    """`extend_schema` for the visitor views' methods. drf-spectacular builds a decorated method's
    schema on the project's default (bearer, scoped) class unless the method already names one:
    this names VisitorAutoSchema first."""

    def decorator(function):
        function.kwargs = {**getattr(function, "kwargs", {}), "schema": VisitorAutoSchema}
        return extend_schema(**kwargs)(function)

    return decorator
