"""Celery configuration shared by every worker role: the reliability settings are part of the design."""

from typing import Any

from geogate.settings import Settings
from schemas import routes


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery settings for Geogate (docs/recovery.md): acks late, requeue on worker loss, no result backend."""
    return {
        "broker_url": settings.require_redis_url(),
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            # Redelivery of a job whose worker vanished; must exceed the longest job.
            "visibility_timeout": settings.visibility_timeout_s,
            "unacked_restore_interval": 5,
            "unacked_restore_throttle": 1,
            "health_check_interval": 10,
            "socket_keepalive": True,
            # One list per priority, taken in this order: tiles wait behind every call (`schemas.routes`).
            "priority_steps": list(routes.PRIORITY_STEPS),
            "sep": routes.PRIORITY_SEP,
        },
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_ignore_result": True,
        "result_backend": None,
        "task_serializer": "msgpack",
        "accept_content": ["msgpack"],
        "task_routes": {f"{queue}.*": {"queue": queue} for queue in routes.QUEUES},
        "task_default_queue": routes.GDAL,
        "task_time_limit": settings.job_time_limit_s + 30,
        "task_soft_time_limit": settings.job_time_limit_s,
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        "worker_send_task_events": False,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
    }
