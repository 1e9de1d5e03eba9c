"""The floor of bench/sockets.py: a bare websocket server on the web process's own server and event
loop (uvicorn with the Procfile's flags), holding no database, cache or channel layer.

`/ws/<n>` accepts and echoes text frames, and remembers the socket as number n; `POST /push/<n>`
sends its body to socket n as a text frame and answers 202 once the frame is written, the least a
REST write can do to reach a socket. Any other HTTP path answers 200 (the harness's /healthz).
"""

from __future__ import annotations

_sockets: dict[str, object] = {}


async def app(scope, receive, send):
    if scope["type"] == "websocket":
        await _socket(scope, receive, send)
    elif scope["type"] == "http":
        await _http(scope, receive, send)


async def _socket(scope, receive, send):
    key = scope["path"].rstrip("/").rsplit("/", 1)[-1]
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
            _sockets[key] = send
        elif message["type"] == "websocket.receive":
            await send({"type": "websocket.send", "text": message.get("text") or ""})
        else:
            _sockets.pop(key, None)
            return


async def _http(scope, receive, send):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status = 200
    if scope["method"] == "POST" and scope["path"].startswith("/push/"):
        target = _sockets.get(scope["path"].rsplit("/", 1)[-1])
        if target is None:
            status = 404
        else:
            await target({"type": "websocket.send", "text": body.decode()})
            status = 202
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
