"""Celery queue and task names: the only place they are spelled. The gateway enqueues by these names."""

GDAL = "gdal"
SANDBOX = "sandbox"
LLM = "llm"
WORKFLOW = "workflow"

QUEUES: tuple[str, ...] = (GDAL, SANDBOX, LLM, WORKFLOW)


def run_call_task(queue: str) -> str:
    """The task that runs one tool call on `queue` (routed by the glob `<queue>.*`)."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; expected one of {', '.join(QUEUES)}")
    return f"{queue}.run_call"
