"""History trimming and blocked-tool filtering (issue 7 item 4)."""

from tests.unit.workers.llm.samples import TOOLS
from workers.llm.providers import Message
from workers.llm.safety import estimate_tokens, offered_tools, trim_to_budget


def test_oldest_history_goes_first_and_the_question_stays() -> None:
    system, question = Message("system", "s" * 400), Message("user", "q")
    history = [Message("user", f"{i}" * 400) for i in range(10)]

    kept = trim_to_budget(system, history, [question], budget=400)

    assert kept[0] == system and kept[-1] == question
    assert [m.content[0] for m in kept[1:-1]] == ["8", "9"]
    assert estimate_tokens(kept) <= 400


def test_an_oversized_tail_is_clipped_not_dropped() -> None:
    system, question, result = Message("system", "s"), Message("user", "q"), Message("user", "r" * 20_000)
    kept = trim_to_budget(system, [], [question, result], budget=1000)
    assert len(kept) == 3 and kept[-1].content.endswith("[trimmed]") and estimate_tokens(kept) <= 1000


def test_blocked_patterns_remove_tools_from_the_offer() -> None:
    assert [t["name"] for t in offered_tools(TOOLS, ["workspace_*", "admin.*"])] == ["raster_info", "raster_reproject"]
