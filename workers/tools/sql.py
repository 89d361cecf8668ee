"""The job of `vector_sql` (`schemas/tools/sql.py`)."""

from schemas.tools.sql import VECTOR_SQL, VectorSqlArgs, VectorSqlResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.sql import answer


@job(VECTOR_SQL)
def vector_sql(args: VectorSqlArgs, ctx: JobContext) -> VectorSqlResult:
    """Run one checked, read-only SELECT over the named layers; answer a table or write a layer."""
    return answer.vector_sql(args, ctx)
