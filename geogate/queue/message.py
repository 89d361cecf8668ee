"""Celery task messages built without a broker connection, so that enqueueing is one op inside the append.

The gateway appends `tool.requested` and pushes the Celery message in the same Lua call (an atomic outbox):
a call is either in the log *and* on its queue, or neither. The payload is exactly what kombu's Redis transport
would LPUSH for `send_task(name, args, queue=queue)` with the msgpack serializer (checked by the integration
tests, where a real Celery worker consumes it).
"""

import base64
import json
import uuid

import msgpack
from celery import Celery
from kombu.serialization import dumps

from schemas.codec import decode
from schemas.events import Event

_PUBLISHER = Celery("geogate-publisher", set_as_current=False)
"""Used only for its pure message builder (`amqp.as_task_v2`); it never connects anywhere."""


def queue_message(
    task_name: str, queue: str, task_id: str, args: tuple[object, ...], argsrepr: str, priority: int = 0
) -> bytes:
    """The JSON envelope kombu's Redis transport stores for one task message.

    `priority` is the list it goes to (`celery_queue_key`): kombu puts a message it gives back (the visibility
    timeout's restore, a reject with requeue) on the list its priority names, the one it came from.
    """
    message = _PUBLISHER.amqp.as_task_v2(
        task_id, task_name, args=args, kwargs={}, argsrepr=argsrepr, kwargsrepr="{}", ignore_result=True
    )
    content_type, encoding, body = dumps(message.body, serializer="msgpack")
    envelope = {
        "body": base64.b64encode(body).decode(),
        "content-encoding": encoding,
        "content-type": content_type,
        "headers": message.headers,
        "properties": {
            **message.properties,
            "delivery_mode": 2,
            "priority": priority,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
            "delivery_info": {"exchange": queue, "routing_key": queue},
        },
    }
    return json.dumps(envelope).encode()


def message_event(raw: bytes) -> Event | None:
    """The `tool.requested` event a queued message carries (its `ts` is when it was enqueued); None if unreadable."""
    try:
        args = envelope_args(json.loads(raw))
        return decode(args[0]) if args else None
    except (ValueError, TypeError):
        return None


def envelope_args(envelope: object) -> tuple[object, ...] | None:
    """The task arguments in an envelope `queue_message` built (msgpack body: args, kwargs, embed)."""
    try:
        args, _kwargs, _embed = msgpack.unpackb(base64.b64decode(envelope["body"]))  # type: ignore[index]
    except (ValueError, KeyError, TypeError, IndexError, msgpack.UnpackException):
        return None
    return tuple(args) if isinstance(args, list | tuple) else None
