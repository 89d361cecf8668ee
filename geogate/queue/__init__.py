"""The Celery queue as both sides use it: the workers' configuration (`config`), the task message the gateway pushes
inside its append (`message`), and kombu's hash of delivered, unacknowledged messages the reaper scans (`unacked`)."""
