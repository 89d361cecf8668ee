"""Definitions are validated when loaded; a malformed one fails with a message naming its file and step (issue 6)."""

from pathlib import Path
from textwrap import dedent

import pytest

from workers.jobkit.errors import JobFailed
from workers.tools import workflows as jobs
from workers.workflows.definitions import DefinitionError
from workers.workflows.loader import builtin_dir, load_definitions, load_dir, load_file
from workers.workflows.validate import defined_before


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def failure(path: Path) -> DefinitionError:
    with pytest.raises(DefinitionError) as caught:
        load_file(path)
    error = caught.value
    assert error.file == str(path)
    assert str(error).startswith(str(path))  # the message names the file first, then the step
    if error.step:
        assert f"step {error.step!r}" in str(error)
    return error


def test_the_shipped_definitions_load_and_include_the_three_of_the_issue() -> None:
    workflows = load_definitions()

    assert {"chain_of_thought", "research", "plan_reprojection"} <= set(workflows)
    assert all(Path(w.file).parent == builtin_dir() for w in workflows.values())


def test_a_next_naming_an_unknown_step_fails_at_that_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad_next.yaml",
        """
        id: bad_next
        description: d
        steps:
          - {id: one, instruction: go, next: nowhere}
          - {id: two, instruction: end, complete: true}
    """,
    )

    assert failure(path).step == "one"


def test_an_unreachable_step_fails_at_that_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "island.yaml",
        """
        id: island
        description: d
        steps:
          - {id: one, instruction: go, next: three}
          - {id: two, instruction: never visited, next: three}
          - {id: three, instruction: end, complete: true}
    """,
    )

    assert failure(path).step == "two"


def test_a_cycle_with_no_exit_fails_at_its_first_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "loop.yaml",
        """
        id: loop
        description: d
        steps:
          - {id: one, instruction: go, next: two}
          - {id: two, instruction: again, next: one}
          - {id: done, instruction: end, complete: true}
    """,
    )

    assert failure(path).step == "one"


def test_a_cycle_whose_exit_is_a_choice_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "loop_ok.yaml",
        """
        id: loop_ok
        description: d
        steps:
          - {id: work, instruction: go, save: notes, append: true}
          - {id: check, instruction: "${notes}", next: {again: work, stop: done}}
          - {id: done, instruction: end, complete: true}
    """,
    )

    assert load_file(path).step("check").choices == ["again", "stop"]


def test_a_cycle_alone_with_no_complete_step_fails(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "spin.yaml",
        """
        id: spin
        description: d
        steps:
          - {id: one, instruction: go, next: two}
          - {id: two, instruction: again, next: one}
    """,
    )

    assert failure(path).step == "one"


def test_an_undefined_variable_fails_at_the_step_that_reads_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "undefined.yaml",
        """
        id: undefined
        description: d
        inputs: {problem: what}
        steps:
          - {id: one, instruction: "${problem}", save: a}
          - {id: two, instruction: "${a} and ${b}", complete: true}
    """,
    )

    assert failure(path).step == "two"


def test_a_variable_saved_on_only_one_branch_is_undefined_after_the_join(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "branch.yaml",
        """
        id: branch
        description: d
        steps:
          - {id: pick, instruction: choose, next: {left: left, right: right}}
          - {id: left, instruction: l, save: found, next: join}
          - {id: right, instruction: r, next: join}
          - {id: join, instruction: "${found}", complete: true}
    """,
    )

    assert failure(path).step == "join"


def test_a_variable_saved_on_every_branch_is_defined_after_the_join(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "branch_ok.yaml",
        """
        id: branch_ok
        description: d
        steps:
          - {id: pick, instruction: choose, next: {left: left, right: right}}
          - {id: left, instruction: l, save: found, next: join}
          - {id: right, instruction: r, save: found, next: join}
          - {id: join, instruction: "${found}", complete: true}
    """,
    )
    workflow = load_file(path)

    assert "found" in defined_before(workflow.spec, workflow.steps)["join"]


def test_a_variable_in_a_tool_call_hint_or_the_completion_is_checked_too(tmp_path: Path) -> None:
    hint = write(
        tmp_path,
        "hint.yaml",
        """
        id: hint
        description: d
        steps:
          - id: one
            instruction: go
            calls: [{tool: raster_info, with: {uri: "${nope}"}}]
            complete: true
    """,
    )
    completion = write(
        tmp_path,
        "completion.yaml",
        """
        id: completion
        description: d
        completion: "${result} ${missing}"
        steps:
          - {id: last, instruction: go, save: result, complete: true}
    """,
    )

    assert failure(hint).step == "one"
    assert failure(completion).step == "last"


def test_a_template_syntax_error_names_the_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "syntax.yaml",
        """
        id: syntax
        description: d
        steps:
          - {id: only, instruction: "${foreach x in}", complete: true}
    """,
    )

    assert failure(path).step == "only"


@pytest.mark.parametrize(
    ("steps", "step"),
    [
        ("[{id: a, instruction: x, complete: true}, {id: a, instruction: y, complete: true}]", "a"),
        ("[{id: a, instruction: x}]", "a"),
        ("[{id: a, instruction: x, next: a, complete: true}]", "a"),
        ("[{id: a, instruction: x, format: json, complete: true}]", "a"),
        ("[{id: a, instruction: x, save: v, require: [k], complete: true}]", "a"),
        ("[{id: a, instruction: x, save: workflow, complete: true}]", "a"),
        ("[{id: a, complete: true}]", "a"),
        ("[{id: a, instruction: x, colour: red, complete: true}]", "a"),
        ("[{instruction: x, complete: true}]", "#1"),
    ],
    ids=["duplicate-id", "last-without-complete", "complete-and-next", "format-without-save",
         "require-without-json", "save-hides-builtin", "no-instruction", "unknown-key", "no-id"],
)  # fmt: skip
def test_malformed_steps_fail_naming_the_step(tmp_path: Path, steps: str, step: str) -> None:
    path = write(tmp_path, "steps.yaml", f"id: w\ndescription: d\nsteps: {steps}\n")

    assert failure(path).step == step


def test_invalid_yaml_and_a_missing_id_fail_naming_the_file(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.yaml", "id: [unclosed\n")
    anonymous = write(tmp_path, "anonymous.yaml", "description: d\nsteps: [{id: a, instruction: x, complete: true}]\n")

    assert failure(broken).step is None
    assert failure(anonymous).step is None


def test_the_seeds_workflow_wrapper_is_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "seed.yaml",
        """
        workflow:
          id: seed_style
          description: d
          steps:
            - {id: only, instruction: go, save: out, complete: true}
    """,
    )

    assert load_file(path).id == "seed_style"


def test_two_files_with_the_same_id_in_one_folder_fail_naming_the_second(tmp_path: Path) -> None:
    body = "id: twin\ndescription: d\nsteps: [{id: a, instruction: x, complete: true}]\n"
    write(tmp_path, "a.yaml", body)
    second = write(tmp_path, "b.yaml", body)

    with pytest.raises(DefinitionError) as caught:
        load_dir(tmp_path)

    assert caught.value.file == str(second)


def test_the_extra_folder_adds_workflows_and_replaces_shipped_ones_by_id(tmp_path: Path) -> None:
    write(tmp_path, "mine.yaml", "id: mine\ndescription: d\nsteps: [{id: a, instruction: x, complete: true}]\n")
    write(tmp_path, "cot.yaml", "id: chain_of_thought\ndescription: mine\ninputs: {problem: p}\n"
          "steps: [{id: a, instruction: '${problem}', save: s, complete: true}]\n")  # fmt: skip

    workflows = load_definitions(tmp_path)

    assert "mine" in workflows
    assert workflows["chain_of_thought"].spec.description == "mine"
    assert "research" in workflows


def test_a_malformed_definition_in_the_extra_folder_fails_the_job_naming_file_and_step(tmp_path: Path) -> None:
    bad = write(
        tmp_path, "bad.yaml", "id: bad\ndescription: d\nsteps: [{id: only, instruction: '${ghost}', complete: true}]\n"
    )

    with pytest.raises(JobFailed) as caught:
        jobs.definitions(tmp_path)

    assert caught.value.code == "workflow.bad_definition"
    assert caught.value.message.startswith(f"{bad}, step 'only':")


def test_a_definition_in_the_dollar_syntax_loads_and_renders_as_its_jinja_twin(tmp_path: Path) -> None:
    body = """\
        id: {id}
        description: d
        inputs: {{problem: p}}
        steps:
          - id: a
            instruction: |
              Problem: {open}problem{close}
              {loop}
              - {open}t.text{close}
              {end}
            save: s
            complete: true
        """
    jinja = body.format(id="twin", open="{{ ", close=" }}", loop="{% for t in thoughts %}", end="{% endfor %}")
    old = body.format(id="twin", open="${", close="}", loop="${foreach t in thoughts}", end="${/foreach}")
    workflows = [load_file(write(tmp_path, name, text)) for name, text in (("new.yaml", jinja), ("old.yaml", old))]
    context = {"problem": "p1", "thoughts": [{"text": "one"}, {"text": "two"}]}

    first, second = (w.steps["a"].instruction for w in workflows)

    assert first.render(context) == second.render(context) == "Problem: p1\n- one\n- two\n"
    assert first.names() == second.names() == {"problem", "thoughts"}


def test_a_jinja_template_reading_an_undefined_variable_fails_at_its_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.yaml",
        "id: bad\ndescription: d\nsteps: [{id: only, instruction: '{{ ghost }}', complete: true}]\n",
    )

    assert failure(path).step == "only" and "'ghost'" in str(failure(path))
