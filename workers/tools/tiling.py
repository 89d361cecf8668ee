"""The tiling's internal job (`schemas/tools/tiling.py`): the fan-in that ends a tiled call from its tiles; the
hand-off that takes a large enough call of a tiled tool off its job and fans it out as tiles; and the follow-up that
counts a parent's tiles done. Each tiled tool's tile job is bound beside the tool's own job."""

from schemas.tools.tiling import FAN_IN, FanInArgs, FanInResult
from workers.jobkit.context import JobContext
from workers.jobs import follow_up, hand_off, job
from workers.tiling import fan_in as tiling_fan_in
from workers.tiling import fan_out, progress


@job(FAN_IN, own_lifecycle=True)
def fan_in(args: FanInArgs, ctx: JobContext) -> FanInResult:
    """End tiled call `args.call_id` from its tiles; a duplicate push after the outcome does nothing."""
    return tiling_fan_in.fan_in(args, ctx)


follow_up(progress.tile_ended)
hand_off(fan_out.fanned_out)
