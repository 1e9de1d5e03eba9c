"""Contacts and tags of the token's widget. Writes go through apps.chats.services only.

A contact is addressed by its 32-character guid, never by the numeric id. The tag list is the one
account-wide read: the distinct tag names in use across every widget of the token's account.
"""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound

from .. import selectors, services
from ..contact_input import ContactMergeInput, ContactPatchInput, TagsInput
from ..models import Contact, ContactTag
from .serializers import ContactListQuery

GUID_PARAM = OpenApiParameter("id", str, OpenApiParameter.PATH, description="The contact's 32-character guid.")


def contact_payload(contact: Contact, tags: list[str] | None = None) -> dict:
    """The contact's output shape. `tags` defaults to the prefetched (or queried) tag names."""
    if tags is None:
        tags = sorted(tag.name for tag in contact.tags.all())
    return {
        "id": contact.guid,
        "name": contact.name,
        "email": contact.email,
        "phone": contact.phone,
        "attributes": contact.attributes,
        "tags": tags,
        "created_at": contact.created_at.isoformat(),
        "updated_at": contact.updated_at.isoformat(),
    }


# --- documentation of output shapes -----------------------------------------------------------------


class ContactDoc(serializers.Serializer):
    id = serializers.CharField(help_text="32-character guid.")
    name = serializers.CharField(allow_blank=True, help_text="The contact's name; empty when unknown.")
    email = serializers.CharField(allow_blank=True, help_text="The contact's e-mail address; empty when unknown.")
    phone = serializers.CharField(allow_blank=True, help_text="The contact's phone number; empty when unknown.")
    attributes = serializers.DictField(help_text="Free attributes object.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Tag names, sorted.")
    created_at = serializers.DateTimeField(help_text="When the contact was created.")
    updated_at = serializers.DateTimeField(help_text="When the contact was last changed.")


class ContactIdentityDoc(serializers.Serializer):
    external_id = serializers.CharField(
        allow_null=True, help_text="The person's id on the site (`ChatWidget.setUser`); null when never given."
    )
    verified = serializers.BooleanField(help_text="The id was proven with the identity secret's HMAC.")
    verified_at = serializers.DateTimeField(allow_null=True, help_text="When it was first proven; null if never.")


class ContactTagsDoc(serializers.Serializer):
    id = serializers.CharField(help_text="The contact's guid.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="All of the contact's tags, sorted.")


class TagListDoc(serializers.Serializer):
    data = serializers.ListField(child=serializers.CharField(), help_text="Distinct tag names of the account, sorted.")


# --- inputs -------------------------------------------------------------------------------------------


# --- views ----------------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List contacts",
        description=(
            "Contacts of the token's widget, newest first, addressed by their 32-character guid. `query` matches "
            "name, e-mail and phone."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a contact",
        description=(
            "One contact by guid: name, e-mail, phone, free-form `attributes` and tags. A foreign or unknown guid is "
            "404."
        ),
    ),
    partial_update=extend_schema(
        summary="Update a contact",
    ),
    tags=extend_schema(
        summary="Tag a contact",
    ),
)
class ContactViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Contacts of the token's widget, newest first, addressed by guid."""

    queryset = Contact.objects.all()
    lookup_field = "guid"
    lookup_url_kwarg = "pk"
    route_scopes = {
        "list": ["contacts:read"],
        "retrieve": ["contacts:read"],
        "partial_update": ["contacts:write"],
        "tags": ["tags:write"],
        "identity": ["contacts:read"],
        "by_external_id": ["contacts:read"],
        "merge": ["contacts:write"],
    }
    idempotency_required = {"partial_update", "tags", "merge"}
    problem_statuses = {"partial_update": [409], "tags": [409], "merge": [409]}

    @classmethod
    def tenant_queryset(cls, widget):
        """A contact under erasure (apps.erasure) reads as missing."""
        return super().tenant_queryset(widget).live()

    def scope_queryset(self, queryset):
        return queryset.prefetch_related(Prefetch("tags", queryset=ContactTag.objects.order_by("name")))

    @extend_schema(
        parameters=[ContactListQuery],
        responses={200: ContactDoc(many=True)},
    )
    def list(self, request):
        query = self.validated(ContactListQuery, data=query_data(request))
        queryset = selectors.match_contacts(self.get_queryset(), query=query.get("query"))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([contact_payload(contact) for contact in page])

    @extend_schema(parameters=[GUID_PARAM], responses={200: ContactDoc})
    def retrieve(self, request, pk=None):
        return Response(contact_payload(self.get_object()))

    @extend_schema(
        parameters=[GUID_PARAM],
        request=ContactPatchInput,
        responses={200: ContactDoc},
        description=(
            "Merge-safe update: only the members sent change; `attributes` merges key by key (a null value "
            "removes that key). Emits contact.updated with the fields that changed."
        ),
    )
    def partial_update(self, request, pk=None):
        contact = self.get_object()
        data = self.validated(ContactPatchInput)
        contact = services.update_contact(widget=request.widget, contact=contact, changes=data)
        tags = sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))
        return Response(contact_payload(contact, tags))

    @extend_schema(
        summary="A contact's identity",
        parameters=[GUID_PARAM],
        responses={200: ContactIdentityDoc},
        description="The person's id on the site as `ChatWidget.setUser` gave it, and whether the identity secret's "
        "HMAC proved it. An unverified id is a detail the page claimed and joins no session. A foreign or unknown "
        "guid is 404.",
    )
    @action(detail=True, methods=["get"])
    def identity(self, request, pk=None):
        return Response(selectors.contact_identity(self.get_object()))

    @extend_schema(
        summary="Find a contact by verified external id",
        parameters=[
            OpenApiParameter(
                "external_id",
                str,
                OpenApiParameter.PATH,
                description="The person's id on the site, 1 to 128 characters.",
            )
        ],
        responses={200: ContactDoc},
        description="The widget's contact whose external id was verified with the identity secret's HMAC (one per "
        "widget). An id kept only unverified, another widget's, or an unknown one is 404.",
    )
    @action(detail=False, methods=["get"], url_path=r"by-external-id/(?P<external_id>.{1,128}?)")
    def by_external_id(self, request, external_id=None):
        contact = selectors.get_verified_contact(self.get_queryset(), external_id=external_id)
        if contact is None:
            raise NotFound("No contact with this verified external id.")
        return Response(contact_payload(contact))

    @extend_schema(
        parameters=[GUID_PARAM],
        request=TagsInput,
        responses={200: ContactTagsDoc},
        description="Attach tags (1 to 64 characters each, at most 50); re-posting an existing tag is a no-op.",
    )
    @action(detail=True, methods=["post"])
    def tags(self, request, pk=None):
        contact = self.get_object()
        data = self.validated(TagsInput)
        tags = services.add_tags(widget=request.widget, contact=contact, names=data["tags"])
        return Response({"id": contact.guid, "tags": tags})

    @extend_schema(
        summary="Merge a contact into another",
        parameters=[GUID_PARAM],
        request=ContactMergeInput,
        responses={200: ContactDoc},
        description=(
            "The path's contact (the source) merges into `into` (the target): its chats, visitor sessions, tags, "
            "identity and attributes move to the target (the target's values win; name, e-mail and phone fill the "
            "target's empty ones), then the source is deleted and reads as 404 everywhere. Chats on the same channel "
            "stay separate chats; the visitor's next message goes to the one with the latest message. Emits "
            "`contact.merged` {from, into}. Answers the target. Merging into itself is 409 `merge_into_self`; two "
            "contacts verified with different external ids are 409 `merge_identity_conflict`; two contacts with an "
            "external id on the same messenger or custom channel are 409 `merge_channel_conflict`; an unknown, foreign "
            "or erased target is 404; more than 50 attributes together is 422."
        ),
    )
    @action(detail=True, methods=["post"])
    def merge(self, request, pk=None):
        source = self.get_object()
        data = self.validated(ContactMergeInput)
        target = self.get_queryset().filter(guid=data["into"]).first()
        if target is None:
            raise NotFound("No contact with the guid in `into`.")
        target = services.merge_contacts(widget=request.widget, source=source, target=target)
        tags = sorted(ContactTag.objects.filter(contact=target).values_list("name", flat=True))
        return Response(contact_payload(target, tags))


def list_account_tag_names(*, widget) -> list[str]:
    """Distinct tag names in use across every widget of `widget`'s account, sorted."""
    return list(
        ContactTag.objects.filter(widget__account_id=widget.account_id)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )


@extend_schema_view(
    get=extend_schema(
        summary="List tags in use",
    ),
)
class TagListView(ScopedAPIView):
    """Distinct tag names in use across the account (every widget of the token's account), sorted."""

    # SECURITY: the account comes from the token's widget, never from the request.
    route_scopes = {"get": ["tags:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(responses={200: TagListDoc})
    def get(self, request):
        unknown = sorted(set(request.query_params))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown parameter."] for name in unknown})
        return Response({"data": list_account_tag_names(widget=request.widget)})
