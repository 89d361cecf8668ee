"""Preflight: which justifications a tool needs, the 4-key justification, and the persist arguments."""

import json
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, field_validator

Domain = Literal["crs_datum", "resampling", "hydrology", "aggregation"]
DOMAINS: tuple[str, ...] = ("crs_datum", "resampling", "hydrology", "aggregation")

JUSTIFICATION_MAX_BYTES = 32 * 1024
"""Largest justification accepted (gdal-mcp's cap)."""


class PreflightSpec(BaseModel):
    """A justification a consequential tool needs before it runs: one declaration, no code in the tool."""

    model_config = ConfigDict(frozen=True)

    domain: Domain
    prompt: str
    """The MCP prompt that asks for it (e.g. `justify_crs_selection`)."""
    args: dict[str, str]
    """Prompt argument ← tool argument (`{"dst_crs": "dst_crs"}`)."""


class Alternative(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str = Field(min_length=1, max_length=200)
    why_not: str = Field(min_length=1, max_length=2000)


class Choice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str = Field(min_length=1, max_length=200)
    rationale: str = Field(min_length=1, max_length=4000)
    tradeoffs: str = Field(min_length=1, max_length=4000)


class Justification(BaseModel):
    """The four keys every justification has (gdal-mcp's schema; docs/preflight.md)."""

    model_config = ConfigDict(extra="forbid")

    intent: str = Field(min_length=1, max_length=2000)
    alternatives: list[Alternative] = Field(min_length=1, max_length=10)
    choice: Choice
    confidence: Literal["low", "medium", "high"]


EXAMPLE: dict[str, JsonValue] = {
    "intent": "compare the areas of land-cover classes across Europe in square metres",
    "alternatives": [{"method": "EPSG:3857", "why_not": "Web Mercator inflates areas away from the equator"}],
    "choice": {
        "method": "EPSG:3035",
        "rationale": "LAEA Europe is equal-area over the whole study region",
        "tradeoffs": "shapes bend towards the edges of Europe; fine for area statistics",
    },
    "confidence": "high",
}
"""A justification of a CRS choice with its four keys: what docs/preflight.md shows and the gate's hint carries."""


def _json_object(value: object) -> object:
    """Accept the justification as an object or as a JSON string (models often send a string)."""
    if isinstance(value, str):
        if len(value.encode()) > JUSTIFICATION_MAX_BYTES:
            raise ValueError(f"justification is larger than {JUSTIFICATION_MAX_BYTES} bytes")
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"justification is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    return value


class PersistItem(BaseModel):
    """One justification to persist: the hash from the preflight hint, its domain, and the 4-key JSON."""

    model_config = ConfigDict(extra="forbid")

    hash: str = Field(pattern=r"^(sha256:)?[0-9a-f]{64}$")
    domain: Domain
    justification: Annotated[dict[str, JsonValue], BeforeValidator(_json_object)]

    @field_validator("hash")
    @classmethod
    def _bare(cls, value: str) -> str:
        return value.removeprefix("sha256:")

    @field_validator("justification")
    @classmethod
    def _size(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if len(json.dumps(value).encode()) > JUSTIFICATION_MAX_BYTES:
            raise ValueError(f"justification is larger than {JUSTIFICATION_MAX_BYTES} bytes")
        return value


class PersistMany(BaseModel):
    """Several justifications at once (all or none)."""

    model_config = ConfigDict(extra="forbid")

    items: list[PersistItem] = Field(min_length=1, max_length=16)


class Persisted(BaseModel):
    """What a persist returns."""

    persisted: list[str]
    """The hashes now in the cache."""
    message: str
