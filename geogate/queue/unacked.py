"""kombu's hash of delivered, unacknowledged messages, as the reaper reads it to find calls no worker started.

kombu's Redis transport keeps each delivered, unacknowledged message in hash `unacked` (delivery tag →
`[envelope, exchange, routing_key]`), indexed by delivery time in sorted set `unacked_index` (no key prefix), until
the consumer acknowledges it or the visibility timeout gives it back to its queue.
"""

import json

import redis

from geogate.queue.message import envelope_args

UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"


def task_args(unacked_value: bytes) -> tuple[object, ...] | None:
    """The positional arguments of a message kombu holds in `unacked`; None for anything not of ours."""
    try:
        return envelope_args(json.loads(unacked_value)[0])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def delivered_before(client: redis.Redis, cutoff: float, limit: int) -> list[tuple[object, ...]]:
    """The arguments of up to `limit` of our messages delivered before `cutoff` (epoch seconds) and not acknowledged."""
    tags = client.zrangebyscore(UNACKED_INDEX, "-inf", cutoff, start=0, num=limit)
    values = client.hmget(UNACKED, tags) if tags else []
    return [args for value in values if value and (args := task_args(value))]
