"""Celery workers: one app, queues gdal/sandbox/llm/workflow; each task appends its outcome to the event log."""
