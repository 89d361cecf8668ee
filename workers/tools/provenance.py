"""The provenance tools' jobs (`schemas/tools/provenance.py`): the record and the re-run, in `workers/provenance/`."""

from schemas.tools.provenance import PROVENANCE, RERUN, ProvenanceArgs, ProvenanceResult, RerunArgs, RerunResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.provenance.record import record
from workers.provenance.rerun import rerun as rerun_lineage


@job(PROVENANCE)
def provenance(args: ProvenanceArgs, ctx: JobContext) -> ProvenanceResult:
    """The lineage of a workspace file from the log, as PROV-JSON, with its drift."""
    return record(args, ctx)


@job(RERUN)
def rerun(args: RerunArgs, ctx: JobContext) -> RerunResult:
    """The lineage's calls made again into a folder, their outputs' sha256 compared."""
    return rerun_lineage(args, ctx)
