"""A short integration written against the client openapi-python-client generated from the running
service's OpenAPI document (.ci/client.sh): a visitor starts a session and writes (visitor API),
then the integrator lists chats, finds the widget's human agent and answers as that agent (REST).
Every call must come back as the documented model; anything else exits non-zero.

Usage: python .ci/client_demo.py BASE_URL TOKEN BUTTON_GUID (the generated package on PYTHONPATH).
"""

from __future__ import annotations

import sys
import uuid

from chat_widget_client import AuthenticatedClient, Client
from chat_widget_client.api.agents import agents_list
from chat_widget_client.api.chats import chats_list, chats_messages_create, chats_messages_list
from chat_widget_client.api.visitor import visitor_messages_create, visitor_sessions_create
from chat_widget_client.models import (
    AgentTypeEnum,
    MessageInputRequest,
    MessageTypeEnum,
    VisitorMessageInputRequest,
    VisitorMessageInputTypeEnum,
    VisitorSessionInputRequest,
)


def expect(response, status: int, what: str):
    if response.status_code != status or response.parsed is None:
        sys.exit(f"{what}: expected {status} and a parsed body, got {response.status_code}: {response.content[:300]!r}")
    print(f"ok  {what}: {response.status_code}")
    return response.parsed


def main(base: str, token: str, button_guid: str) -> None:
    # The visitor's side: a session, then the first message (which opens the chat).
    public = Client(base_url=base, raise_on_unexpected_status=True)
    session = expect(
        visitor_sessions_create.sync_detailed(
            button_guid, client=public, body=VisitorSessionInputRequest(name="Generated client")
        ),
        201,
        "visitor session",
    )
    visitor = Client(
        base_url=base, headers={"Authorization": f"Visitor {session.session_token}"}, raise_on_unexpected_status=True
    )
    expect(
        visitor_messages_create.sync_detailed(
            button_guid,
            client=visitor,
            body=VisitorMessageInputRequest(type_=VisitorMessageInputTypeEnum.TEXT, body="Hello from a visitor"),
        ),
        201,
        "visitor message",
    )

    # The integrator's side, with the bearer token.
    api = AuthenticatedClient(base_url=base, token=token, raise_on_unexpected_status=True)
    chats = expect(chats_list.sync_detailed(client=api, limit=10), 200, "list chats").data
    chat = next((c for c in chats if c.client_id == session.client_id), None)
    if chat is None:
        sys.exit(f"the visitor's chat is not in the list: {[c.client_id for c in chats]}")
    agents = expect(agents_list.sync_detailed(client=api), 200, "list agents").data
    human = next(a for a in agents if a.type_ == AgentTypeEnum.HUMAN)
    accepted = expect(
        chats_messages_create.sync_detailed(
            chat.id,
            client=api,
            body=MessageInputRequest(
                type_=MessageTypeEnum.TEXT, body="Hello from the generated client", agent_id=human.id
            ),
            x_service_idempotency_key=str(uuid.uuid4()),
        ),
        202,
        "send a message",
    )
    messages = expect(chats_messages_list.sync_detailed(chat.id, client=api), 200, "list messages").data
    if accepted.id not in [m.id for m in messages]:
        sys.exit("the sent message is not in the chat's messages")
    print(f"client run ok: chat {chat.id}, message {accepted.id} sent as agent {human.id}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
