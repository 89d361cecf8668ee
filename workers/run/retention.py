"""The worker node's retention thread: applies the retention policy by itself every `GEOGATE_RETENTION_INTERVAL_S`,
and removes what tiled calls left in the workspace (`workers.tiling.leftovers`).

Every node runs one; the pass's lock (`geogate.eventlog.retention.trim`) lets one act at a time. It is its own
thread, not the heartbeat's: a snapshot of a big log takes longer than a lease lives.
"""

import logging
import threading

from redis.exceptions import RedisError

from geogate.calls.store import EventStore
from geogate.eventlog.retention import trim
from geogate.settings import Settings
from workers.jobkit.errors import JobFailed
from workers.tiling import leftovers

logger = logging.getLogger(__name__)


class RetentionThread(threading.Thread):
    """Trims the log to the policy (after a snapshot) every interval, until `stop()`; idle without a policy."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(name="geogate-retention", daemon=True)
        self.settings = settings
        self.store = EventStore.from_settings(settings)
        self._stopped = threading.Event()

    @property
    def active(self) -> bool:
        policy = self.settings.retention
        return policy.max_age_s is not None or policy.maxlen is not None

    def run(self) -> None:
        while not self._stopped.wait(self.settings.retention.interval_s):
            self._sweep()
            if not self.active:
                continue
            try:
                removed = trim(self.store, self.settings.retention)
            except RedisError as exc:
                logger.warning("retention: Redis unavailable (%s); the next pass retries", exc)
                continue
            except Exception:  # the thread must outlive any bug in a pass
                logger.exception("retention: pass failed")
                continue
            if any(removed.values()):
                logger.info("retention: trimmed %s", removed)

    def _sweep(self) -> None:
        try:
            leftovers.sweep(self.store, self.settings.workspace_roots())
            leftovers.sweep_objects(self.store, self.settings.workspaces)
        except (RedisError, OSError, JobFailed) as exc:
            logger.warning("retention: leftover parts not swept (%s); the next pass retries", exc)

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=5)


def start(settings: Settings) -> RetentionThread:
    """Start the thread: it sweeps leftovers always, and trims when a policy is set (max age or length)."""
    thread = RetentionThread(settings)
    thread.start()
    return thread
