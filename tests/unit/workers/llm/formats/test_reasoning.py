"""Reasoning is split off before any call is looked for, as serving engines do."""

import pytest

from workers.llm.formats.reasoning import split_reasoning


@pytest.mark.parametrize(
    ("opener", "closer"),
    [
        ("<think>", "</think>"),
        ("[THINK]", "[/THINK]"),
        ("<|channel>thought", "<channel|>"),
        ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    ],
)
def test_a_leading_block_is_reasoning_and_the_rest_content(opener: str, closer: str) -> None:
    split = split_reasoning(f"\n{opener}\nstep one\nstep two\n{closer}\n\nThe answer.")
    assert (split.reasoning, split.content.strip(), split.errors) == ("step one\nstep two", "The answer.", [])


def test_a_closer_whose_opener_was_in_the_prompt_ends_the_reasoning() -> None:
    split = split_reasoning("The user wants X.\n</think>\n\nHere is X.")
    assert split.reasoning == "The user wants X." and split.content.strip() == "Here is X."


def test_a_closer_inside_a_json_string_is_text() -> None:
    text = '{"tool": "write_file", "params": {"path": "p", "content": "a </think> b"}}'
    assert split_reasoning(text).content == text and split_reasoning(text).reasoning == ""


def test_reasoning_never_closed_is_an_error_and_leaves_no_content() -> None:
    split = split_reasoning("<think>\nI will call <tool_call>{...}</tool_call> and")
    assert split.content == "" and [e.kind for e in split.errors] == ["truncated"]


def test_a_think_tag_later_in_the_content_is_content() -> None:
    text = "Use <think> tags for reasoning. </think> closes them."
    split = split_reasoning("<think>plan</think>" + text)
    assert split.reasoning == "plan" and split.content == text


def test_several_leading_blocks_are_all_reasoning() -> None:
    split = split_reasoning("<think>a</think>[THINK]b[/THINK]c")
    assert (split.reasoning, split.content) == ("a\n\nb", "c")
