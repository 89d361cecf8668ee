"""The Celery app: one `run_call` task per queue, a task base that holds the process's store and settings."""

import os
import socket
from functools import cached_property

from celery import Celery, Task
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown

from geogate.calls.store import EventStore
from geogate.process.lifetime import die_with_parent
from geogate.process.memory import settle_memory
from geogate.queue.config import celery_config
from geogate.settings import Settings, process_settings
from schemas import routes
from schemas.tools.extra import load as load_extra
from workers.maps.layer import serve_layer
from workers.maps.xyz import serve_tile
from workers.run import lease, retention
from workers.run.memory import limit_address_space
from workers.run.runner import run_call
from workers.tools import load_all

app = Celery("geogate", set_as_current=True)


def configure(settings: Settings) -> Celery:
    """Configure the app from settings read at the entry point (`python -m workers`)."""
    app.conf.update(celery_config(settings))
    app.conf.geogate_settings = settings
    load_all()
    extra = load_extra(settings.extra_tools)  # tools a deployment adds (`GEOGATE_EXTRA_TOOLS`); none by default
    if extra is not None:
        extra.load_jobs()
    return app


class GeogateTask(Task):
    """Celery's DatabaseTask pattern: one store per process, created after the prefork fork."""

    abstract = True
    Request = "workers.run.oom:OomAwareRequest"  # a call whose pool process the OOM killer ended fails at once

    @cached_property
    def settings(self) -> Settings:
        return self.app.conf.geogate_settings or process_settings()

    @cached_property
    def store(self) -> EventStore:
        return EventStore.from_settings(self.settings)

    @cached_property
    def worker_name(self) -> str:
        return f"{socket.gethostname()}:{os.getpid()}"


def hold_lease(settings: Settings, queues: list[str], pool: str, concurrency: int) -> None:
    """Take this node's lease when the worker initialises (before its pool forks) and give it up after it drains."""
    held: list[lease.Heartbeat | retention.RetentionThread] = []

    def take(**_: object) -> None:
        held.append(lease.start(settings, queues, pool, concurrency))
        held.append(retention.start(settings))

    def give_up(**_: object) -> None:
        for thread in held:
            thread.stop()

    worker_init.connect(take, weak=False)
    worker_shutdown.connect(give_up, weak=False)


def pool_processes_die_with_the_node() -> None:
    """Each prefork pool process ends when the node's main process does, whenever that happens.

    Celery arms the pool process's parent-death signal (SIGKILL) after the fork, and does not check that the parent
    is still there: a node killed between its pool's fork and that arming (a machine lost as its worker starts, a
    stopped `geogate dev`) left its pool processes running for good, each holding the others' pipes open. Here each
    pool process checks, once the signal is armed (`worker_process_init` comes after it), that its parent is still
    the node, and exits if not. The solo pool sends the same signal in the node itself, which has nothing to check.
    """
    node = os.getpid()

    def check(**_: object) -> None:
        if os.getpid() != node:
            die_with_parent(node)

    worker_process_init.connect(check, weak=False)


def limit_pool_processes_memory(settings: Settings) -> None:
    """Each prefork pool process caps its address space when it starts (`workers.run.memory`); the solo and threads
    pools run jobs in the node itself, which keeps no limit (its heartbeat and reaper must not fail with a job)."""

    def limit(**_: object) -> None:
        limit_address_space(settings.job_memory_mb)

    worker_process_init.connect(limit, weak=False)


def settle_memory_when_started() -> None:
    """Freeze the node's start-up heap (`geogate.process.memory`) at `worker_init`, which the pool processes forked
    after it inherit, and again at `worker_ready` for what the node's own consumer built meanwhile."""

    def settle(**_: object) -> None:
        settle_memory()

    worker_init.connect(settle, weak=False)
    worker_ready.connect(settle, weak=False)


def _register(queue: str) -> None:
    @app.task(name=routes.run_call_route(queue), base=GeogateTask, bind=True)
    def run(self: GeogateTask, payload: bytes, dispatch: int = 1) -> None:
        run_call(self.store, self.settings, self.worker_name, payload, dispatch=dispatch, lease=lease.current())


for _queue in routes.QUEUES:
    _register(_queue)


@app.task(name=routes.RENDER_TILE, base=GeogateTask, bind=True)
def render_tile(self: GeogateTask, payload: bytes) -> None:
    """One XYZ map tile: no event, the answer goes to the gateway that waits for it (`workers.maps.xyz`)."""
    serve_tile(self.store.redis, payload, self.settings.workspace_roots())


@app.task(name=routes.MAP_LAYER, base=GeogateTask, bind=True)
def map_layer(self: GeogateTask, payload: bytes) -> None:
    """One layer of the interactive map: no event, the answer goes to the gateway that waits (`workers.maps.layer`)."""
    serve_layer(self.store.redis, payload, self.settings.workspace_roots())
