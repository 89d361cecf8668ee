"""The MCP conformance suite's tool fixtures as Geogate tools: specs here, jobs in `workers.conformance`.

The gateway publishes them only with `GEOGATE_CONFORMANCE=1` (`make conformance`); their calls go through the log
and the workers like any other tool's.
"""

from schemas.tools.base import ToolSpec
from schemas.tools.conformance.asking import ASKING_SPECS
from schemas.tools.conformance.calls import CALL_SPECS
from schemas.tools.conformance.tasks import TASK_SPECS

CONFORMANCE_SPECS: tuple[ToolSpec, ...] = TASK_SPECS + CALL_SPECS + ASKING_SPECS

__all__ = ["CONFORMANCE_SPECS"]
