"""cnki-mcp: an MCP server for CNKI (中国知网). Version only; importing has no side effects."""

__version__ = "0.1.0"
