"""The labelled sample set: every sample extracted exactly, and no call invented from broken output or reasoning."""

import pytest

from tests.unit.workers.llm.corpus import TOOLS, Sample, families, judge
from workers.llm import extract_calls

SAMPLES = [(family, sample) for family, samples in families().items() for sample in samples]


@pytest.mark.parametrize(("family", "sample"), SAMPLES, ids=[s.id for _, s in SAMPLES])
def test_sample_is_extracted_exactly(family: str, sample: Sample) -> None:
    found = extract_calls(sample.text, TOOLS)
    verdict = judge(sample, [(c.tool, c.params) for c in found.calls], len(found.errors))
    assert verdict.exact, (family, found.calls, found.errors)
    assert verdict.invented == 0


def test_every_family_has_broken_and_reasoning_samples() -> None:
    for family, samples in families().items():
        kinds = {s.kind for s in samples}
        assert "truncated" in kinds, family
        assert len(samples) >= 12, family
    assert sum(s.kind == "reasoning" for _, s in SAMPLES) >= 9


def test_sample_ids_are_unique() -> None:
    ids = [s.id for _, s in SAMPLES]
    assert len(ids) == len(set(ids))
