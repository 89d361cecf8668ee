"""The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the event log.

`policy` decides which calls become tasks, `extension` serves `tasks/get`, `tasks/update` and `tasks/cancel` from the
call projection (`geogate.calls.projections.tasks`). The one seam into the call path is `Gateway.call`: for a
client that declared the extension it waits up to a threshold, then hands back a task instead of the result.
"""
