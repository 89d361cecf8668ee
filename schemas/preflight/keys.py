"""Preflight keys: which justifications a call needs, keyed by sha256 over domain, prompt hash and normalised args."""

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pyproj import CRS
from pyproj.exceptions import CRSError

from schemas.preflight.justification import PreflightSpec
from schemas.preflight.prompts import PROMPTS
from schemas.tools import ToolSpec


@functools.lru_cache(maxsize=1024)
def normalise_crs(value: str) -> str:
    """`EPSG:3857`, `epsg:3857` and the WKT of 3857 all give `EPSG:3857`; a CRS with no code gives its WKT2."""
    try:
        crs = CRS.from_user_input(value)
    except CRSError:
        return str(value).strip()
    code = crs.to_authority(min_confidence=90)
    return f"{code[0]}:{code[1]}".upper() if code else crs.to_wkt("WKT2_2019")


def normalise(domain: str, value: Any) -> Any:
    if value is None:
        return "unknown"
    if domain == "crs_datum":
        return normalise_crs(str(value))
    return str(value).strip().casefold()


def prompt_args(spec: PreflightSpec, tool_args: dict[str, Any]) -> dict[str, Any]:
    """The prompt's arguments taken from the tool's (validated) arguments, normalised."""
    return {name: normalise(spec.domain, tool_args.get(source)) for name, source in spec.args.items()}


def cache_key(domain: str, prompt: str, args: dict[str, Any]) -> str:
    """Shared across tools: a CRS justified for rasters also unlocks vectors."""
    material = {"domain": domain, "prompt_hash": PROMPTS[prompt].template_hash, "args": args}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Needed:
    """One justification a call needs: which prompt, with which arguments, under which cache key."""

    domain: str
    prompt: str
    prompt_args: dict[str, Any]
    hash: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return PROMPTS[self.prompt].messages(self.prompt_args)

    def as_hint(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "prompt": self.prompt,
            "prompt_args": self.prompt_args,
            "hash": self.hash,
            "messages": self.messages,
        }


def needed_for(spec: ToolSpec, args: dict[str, Any]) -> list[Needed]:
    """Every justification `spec` declares, keyed from the call's validated arguments (pure)."""
    found = []
    for needed in spec.preflight:
        pargs = prompt_args(needed, args)
        digest = cache_key(needed.domain, needed.prompt, pargs)
        found.append(Needed(needed.domain, needed.prompt, pargs, digest))
    return found
