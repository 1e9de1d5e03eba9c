"""Payload builders of conversations (plain dicts), shared by the REST API, the visitor API, websocket
frames and webhook payloads."""

from __future__ import annotations

from functools import lru_cache

from django.core import signing
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from apps.core.files import DEFAULT_CONTENT_TYPE
from apps.core.uploads import content_disposition

from .models import PROACTIVE_ORIGIN, Chat, File, Message

FILE_URL_MAX_AGE = 300  # seconds a signed download URL stays valid
# The longest lifetime a URL may be signed for (a contact's export links live an hour).
FILE_URL_LONGEST_AGE = 3600
_FILE_SALT = "chats.file-download"


@lru_cache(maxsize=1)
def _s3_storage_class() -> type | None:
    try:
        from storages.backends.s3 import S3Storage
    except ImproperlyConfigured:  # boto3 is not installed, so no storage is an S3Storage
        return None
    return S3Storage


def signed_file_url(file: File, *, max_age: int = FILE_URL_MAX_AGE) -> str:
    """A short-lived URL of the stored bytes, valid `max_age` seconds (at most
    FILE_URL_LONGEST_AGE). An S3 storage signs its own URL; every other storage (the file system,
    and object stores whose URLs cannot carry response headers) goes through our signed download
    route.

    SECURITY: an S3 storage's URL asks the store to answer with the file's stored Content-Type as
    an attachment (signed response-* overrides, so it holds for files stored before), the way our
    download route answers: a visitor's .html or .svg never renders on the bucket's origin."""
    max_age = min(max_age, FILE_URL_LONGEST_AGE)
    storage = file.stored.storage
    s3_storage = _s3_storage_class()
    if s3_storage is not None and isinstance(storage, s3_storage):
        overrides = {
            "ResponseContentDisposition": content_disposition(file.original_name),
            "ResponseContentType": file.content_type or DEFAULT_CONTENT_TYPE,
        }
        return storage.url(file.stored.name, parameters=overrides, expire=max_age)
    claims = {"f": file.pk, "w": file.widget_id}
    if max_age != FILE_URL_MAX_AGE:
        claims["t"] = max_age  # signed with the rest: the lifetime cannot be stretched
    token = signing.dumps(claims, salt=_FILE_SALT, compress=True)
    return reverse("file-download", kwargs={"token": token})


def read_file_token(token: str) -> dict | None:
    try:
        claims = signing.loads(token, salt=_FILE_SALT, max_age=FILE_URL_LONGEST_AGE)
        max_age = claims.get("t", FILE_URL_MAX_AGE) if isinstance(claims, dict) else None
        if not isinstance(max_age, int) or max_age > FILE_URL_LONGEST_AGE:
            return None
        return signing.loads(token, salt=_FILE_SALT, max_age=max_age)
    except signing.BadSignature:
        return None


def attribution(agent_id, kind: str, at) -> dict | None:
    if not kind:
        return None
    return {"agent_id": agent_id, "type": kind, "at": at.isoformat() if at else None}


def file_payload(file: File | None) -> dict | None:
    if file is None:
        return None
    return {"id": file.pk, "name": file.original_name, "content_type": file.content_type, "size": file.size}


# The columns a chat's payload is made of, as `QuerySet.values()` names them: a list reads these
# rows and never builds Chat and Contact instances (building them is a large share of a list's
# interpreter time under load).
CHAT_ROW_FIELDS = (
    "id",
    "status",
    "channel",
    "contact__guid",
    "agent_id",
    "department_id",
    "accepted_by_id",
    "accepted_by_type",
    "accepted_at",
    "handled_by_id",
    "handled_by_type",
    "handled_at",
    "handling",
    "has_client_messages",
    "last_message_id",
    "last_message_at",
    "created_at",
    "updated_at",
)


def chat_row_payload(row: dict) -> dict:
    """The public shape of a chat from a row of `CHAT_ROW_FIELDS`."""
    return {
        "id": row["id"],
        "status": row["status"],
        "channel": row["channel"],
        "client_id": row["contact__guid"],
        "agent_id": row["agent_id"],
        "department_id": row["department_id"],
        "accepted_by": attribution(row["accepted_by_id"], row["accepted_by_type"], row["accepted_at"]),
        "handled_by": attribution(row["handled_by_id"], row["handled_by_type"], row["handled_at"]),
        "handling": row["handling"],
        "has_client_messages": row["has_client_messages"],
        "last_message_id": row["last_message_id"],
        "last_message_at": row["last_message_at"].isoformat() if row["last_message_at"] else None,
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def chat_payload(chat: Chat) -> dict:
    row = {name: getattr(chat, name) for name in CHAT_ROW_FIELDS if name != "contact__guid"}
    return chat_row_payload({**row, "contact__guid": chat.contact.guid})


def message_payload(message: Message, *, url_max_age: int = FILE_URL_MAX_AGE) -> dict:
    payload = {
        "id": message.pk,
        "chat_id": message.chat_id,
        "type": message.type,
        "body": message.body,
        "markdown": message.markdown or None,
        "file": file_payload(message.file),
        "url": signed_file_url(message.file, max_age=url_max_age) if message.file_id and message.file else None,
        "coords": message.coords,
        "sticker": message.sticker,
        "keyboard": message.keyboard if message.type == Message.Type.KEYBOARD else None,
        "sources": message.sources or None,
        "origin": message.origin or None,
        "author": {"kind": message.author_kind, "agent_id": message.agent_id},
        "visibility": message.visibility,
        "seen_at": message.seen_at.isoformat() if message.seen_at else None,
        "created_at": message.created_at.isoformat(),
    }
    return payload


def visitor_message_frame(message: Message) -> dict:
    """What the visitor may see of a message (public messages only ever reach this)."""
    author_name = ""
    if message.agent_id and message.agent is not None:
        author_name = message.agent.name
    elif message.author_kind == Message.Author.CLIENT:
        # the name the visitor gave (session, pre-chat form, or the owner's edit of the contact)
        author_name = message.chat.contact.name or ""
    elif message.origin == PROACTIVE_ORIGIN:
        author_name = message.chat.widget.name  # a proactive message sent in the widget's name
    return {
        "id": message.pk,
        "chat_id": message.chat_id,
        "type": message.type,
        "body": message.body,
        "markdown": message.markdown or None,
        "file": file_payload(message.file),
        "url": signed_file_url(message.file) if message.file_id and message.file else None,
        "coords": message.coords,
        "sticker": message.sticker,
        "keyboard": message.keyboard if message.type == Message.Type.KEYBOARD else None,
        "sources": message.sources or None,
        "author": {"kind": message.author_kind, "name": author_name},
        "seen": message.seen_at is not None,
        "created_at": message.created_at.isoformat(),
    }


def visitor_chat_frame(chat: Chat | None) -> dict | None:
    """What the visitor may know of their room's state: closed (`expired`) or not (`active`; `ready`
    is an operator's note to the scheduler), and whether a machine handed it to people who have not
    answered yet. None for a spam room (a visitor is never told) or no room."""
    if chat is None or chat.status == Chat.Status.SPAM:
        return None
    return {
        "event": "chat",
        "chat_id": chat.pk,
        "status": Chat.Status.EXPIRED if chat.status == Chat.Status.EXPIRED else Chat.Status.ACTIVE,
        "awaiting_human": chat.awaiting_human_since is not None,
    }
