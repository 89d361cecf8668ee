"""The jobs of `vector_sql` and `vector_calculate` (`schemas/tools/sql.py`)."""

from schemas.tools.sql import (
    VECTOR_CALCULATE,
    VECTOR_SQL,
    VectorCalculateArgs,
    VectorCalculateResult,
    VectorSqlArgs,
    VectorSqlResult,
)
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.sql import answer, calculate


@job(VECTOR_SQL)
def vector_sql(args: VectorSqlArgs, ctx: JobContext) -> VectorSqlResult:
    """Run one checked, read-only SELECT over the named layers; answer a table or write a layer."""
    return answer.vector_sql(args, ctx)


@job(VECTOR_CALCULATE)
def vector_calculate(args: VectorCalculateArgs, ctx: JobContext) -> VectorCalculateResult:
    """Keep the features `where` selects and add or replace `fields`, on the allow-listed expression grammar."""
    return calculate.vector_calculate(args, ctx)
