"""The thin MCP gateway: validates calls, appends them to the event log with their queue message, awaits outcomes."""
