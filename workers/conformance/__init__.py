"""Jobs of the MCP conformance suite's fixtures (`schemas.tools.conformance`); importing the package registers them.

A worker always has them (the registry loads every family); only a gateway started with `GEOGATE_CONFORMANCE=1`
publishes the tools, so in a normal run nothing ever calls them.
"""

from workers.conformance import asking, calls, tasks

__all__ = ["asking", "calls", "tasks"]
