"""The MCP server: the REST API's routes offered as Model Context Protocol tools (docs/integrating/mcp.md)."""
