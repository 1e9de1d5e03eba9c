"""The machinery room: what the framework or the server would otherwise provide (compiled
statements, the outbound transports, the realtime relay, the broker, queue depth and metrics).
It imports no other app."""
