"""The justification prompts (MCP prompts, each under 300 tokens) and their template hashes."""

import hashlib
from dataclasses import dataclass
from typing import Any

ANSWER_FORMAT = (
    "Reply with JSON only, exactly these four keys:\n"
    '{"intent": "what the result must be good for", '
    '"alternatives": [{"method": "...", "why_not": "..."}], '
    '"choice": {"method": "...", "rationale": "...", "tradeoffs": "..."}, '
    '"confidence": "low" | "medium" | "high"}'
)


@dataclass(frozen=True)
class PromptTemplate:
    """One justification prompt: its domain, its arguments, and its text with `{argument}` fields."""

    name: str
    domain: str
    title: str
    arguments: tuple[str, ...]
    text: str

    @property
    def template_hash(self) -> str:
        """Changes whenever the text changes, so edited prompts invalidate their justifications."""
        return hashlib.sha256(f"{self.name}\n{self.text}\n{ANSWER_FORMAT}".encode()).hexdigest()[:16]

    def render(self, args: dict[str, Any]) -> str:
        return f"{self.text.format(**args)}\n\n{ANSWER_FORMAT}"

    def messages(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """The rendered prompt as MCP prompt messages (so a host needs no `prompts/get`)."""
        return [{"role": "user", "content": {"type": "text", "text": self.render(args)}}]


PROMPTS: dict[str, PromptTemplate] = {
    p.name: p
    for p in (
        PromptTemplate(
            "justify_crs_selection",
            "crs_datum",
            "Justify a target CRS",
            ("dst_crs",),
            "You are about to reproject geospatial data to {dst_crs}. Before it runs, justify the choice of CRS "
            "and datum: what property must the output preserve (area, shape, distance, direction), over what "
            "extent, and which datum transformation it implies. Name at least one alternative CRS and why it "
            "is worse here.",
        ),
        PromptTemplate(
            "justify_resampling_method",
            "resampling",
            "Justify a resampling method",
            ("method",),
            "You are about to resample a raster with the {method} method. Justify it for this data: is it "
            "categorical (classes, codes) or continuous (elevation, temperature)? Should values be preserved "
            "exactly, smoothed, or aggregated? Name at least one alternative method and why it is worse here.",
        ),
        PromptTemplate(
            "justify_hydrology_conditioning",
            "hydrology",
            "Justify DEM conditioning for hydrology",
            ("method",),
            "You are about to condition an elevation model for flow analysis with {method}. Justify it: how "
            "will sinks and flats be handled (filling, breaching, carving), and what does it do to real "
            "depressions? Name at least one alternative and why it is worse here.",
        ),
        PromptTemplate(
            "justify_aggregation_strategy",
            "aggregation",
            "Justify an aggregation strategy",
            ("method",),
            "You are about to aggregate values to a coarser grid or to zones with {method}. Justify it: which "
            "statistic (mean, sum, mode, max…) keeps what the analysis needs, and how are nodata and partial "
            "cells treated? Name at least one alternative and why it is worse here.",
        ),
    )
}
