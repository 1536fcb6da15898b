"""shiftbox domain MCP servers."""
