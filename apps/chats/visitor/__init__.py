"""The visitor channel: the public HTTP API and the websocket the embed script speaks."""
