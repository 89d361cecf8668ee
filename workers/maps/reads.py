"""Reads for a map (a tile, a layer) taken off the gdal queue and answered on the gateway's reply list: no event,
no result in the log; a request whose deadline passed is skipped, since its gateway has already answered."""

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from pydantic import BaseModel, ValidationError

from schemas.xyz import ReadRequest, pack, unpack

logger = logging.getLogger(__name__)

REPLY_TTL_S = 30
"""How long an answer waits on its list for a gateway that stopped waiting."""


R = TypeVar("R", bound=ReadRequest)


def serve(
    client: redis.Redis, payload: bytes, request_type: type[R], work: Callable[[R], BaseModel], failed: BaseModel
) -> BaseModel | None:
    """Answer one request with `work`'s reply (`failed` when it raised); None when nobody waits any more."""
    try:
        request = unpack(request_type, payload)
    except (ValidationError, ValueError) as exc:
        logger.warning("a map request that is not one was dropped: %s", exc)
        return None
    if time.time() > request.deadline:
        return None
    try:
        reply = work(request)
    except Exception:  # the top of a task: the gateway gets an answer, never a silent wait
        logger.exception("map request %s failed", request)
        reply = failed
    with client.pipeline(transaction=False) as pipe:
        pipe.lpush(request.reply_to, pack(reply))
        pipe.expire(request.reply_to, REPLY_TTL_S)
        pipe.execute()
    return reply
