"""The tools' tests talk to the server with the official MCP client (`mcp.Client`), connected
in-process to the server a token gets (`apps.mcp.server.build`), and read the effects with the REST
API, as an integrator would."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client

from apps.mcp import server


@dataclass(frozen=True)
class Outcome:
    """A tool's answer: `data` (its structured content) or, when refused, `problem` (the JSON
    object of its text content)."""

    is_error: bool
    data: Any
    problem: dict | None
    text: str


def _outcome(result) -> Outcome:
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        return Outcome(True, None, json.loads(text), text)
    return Outcome(False, result.structured_content, None, text)


def call_tool(credential: str, name: str, arguments: dict | None = None) -> Outcome:
    async def go():
        async with Client(server.build(credential)) as client:
            return await client.call_tool(name, arguments or {})

    return _outcome(anyio.run(go))


def call_tools(credential: str, calls: list[tuple[str, dict]]) -> list[Outcome]:
    """Several calls in one session, in order."""

    async def go():
        async with Client(server.build(credential)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return [_outcome(result) for result in anyio.run(go)]


def tool_names(credential: str) -> list[str]:
    async def go():
        async with Client(server.build(credential)) as client:
            return (await client.list_tools()).tools

    return sorted(tool.name for tool in anyio.run(go))


def listed_tools(credential: str) -> dict:
    async def go():
        async with Client(server.build(credential)) as client:
            return (await client.list_tools()).tools

    return {tool.name: tool for tool in anyio.run(go)}


def read_resource(credential: str, uri: str):
    async def go():
        async with Client(server.build(credential)) as client:
            return await client.read_resource(uri)

    return anyio.run(go)


def resource_templates(credential: str) -> list:
    async def go():
        async with Client(server.build(credential)) as client:
            return (await client.list_resource_templates()).resource_templates

    return anyio.run(go)


def rest_problem(response) -> dict:
    """The members of a REST problem that a tool error carries."""
    body = response.json()
    return {key: value for key, value in body.items() if key not in {"type", "title", "instance"}}
