"""The contract between gateway and workers: event models, tool models, task names and the msgpack codec.

Imports nothing from gateway/, workers/ or geogate/ (checked by tests/unit/test_boundaries.py).
"""

from schemas.codec import decode, encode
from schemas.events import AnyEventData, Event, EventData

__all__ = ["AnyEventData", "Event", "EventData", "decode", "encode"]
