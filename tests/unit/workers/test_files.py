"""Workspace scoping and atomic outputs (DESIGN: outputs written to a temp file and renamed into place)."""

from pathlib import Path

import pytest

from workers import files
from workers.errors import JobFailed
from workers.files import atomic_output, output_path, replace_file, resolve_in_workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.tif").write_bytes(b"x")
    (tmp_path / "outside.tif").write_bytes(b"x")
    return tmp_path / "ws"


def code_of(fn, *args, **kwargs) -> tuple[str, str | None]:
    with pytest.raises(JobFailed) as info:
        fn(*args, **kwargs)
    return info.value.code, info.value.field


def test_relative_and_absolute_paths_inside_a_root_resolve(root: Path) -> None:
    assert resolve_in_workspace("a.tif", [root]) == root / "a.tif"
    assert resolve_in_workspace(str(root / "a.tif"), [root]) == root / "a.tif"
    assert resolve_in_workspace("file://" + str(root / "a.tif"), [root]) == root / "a.tif"


def test_dot_dot_is_refused_even_when_it_would_land_inside(root: Path) -> None:
    assert code_of(resolve_in_workspace, "../ws/a.tif", [root]) == ("path.outside_workspace", "uri")


def test_an_absolute_path_outside_every_root_is_refused(root: Path) -> None:
    assert code_of(resolve_in_workspace, str(root.parent / "outside.tif"), [root], field="mask") == (
        "path.outside_workspace",
        "mask",
    )


def test_a_symlink_that_resolves_outside_is_refused(root: Path) -> None:
    (root / "escape.tif").symlink_to(root.parent / "outside.tif")
    assert code_of(resolve_in_workspace, "escape.tif", [root])[0] == "path.outside_workspace"


def test_a_missing_file_inside_the_workspace_says_not_found(root: Path) -> None:
    assert code_of(resolve_in_workspace, "missing.tif", [root])[0] == "path.not_found"


def test_the_second_root_is_searched_when_the_first_lacks_the_file(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.tif").write_bytes(b"y")
    assert resolve_in_workspace("b.tif", [root, other]) == other / "b.tif"


def test_an_existing_output_is_not_replaced_unless_asked(root: Path) -> None:
    assert code_of(output_path, "a.tif", [root], overwrite=False) == ("output.exists", "output")
    assert output_path("a.tif", [root], overwrite=True) == root / "a.tif"


def test_atomic_output_renames_only_on_success(root: Path) -> None:
    target = root / "new.tif"
    with pytest.raises(RuntimeError), atomic_output(target) as tmp:
        tmp.write_bytes(b"partial")
        raise RuntimeError("job died")
    assert not target.exists() and list(root.glob("*.partial*")) == []

    with atomic_output(target) as tmp:
        tmp.write_bytes(b"whole")
    assert target.read_bytes() == b"whole"


def test_a_retry_replaces_what_a_killed_attempt_left_beside_the_target(root: Path) -> None:
    target = root / "dem.tif"
    with pytest.raises(RuntimeError), atomic_output(target) as first:
        raise RuntimeError("learn the temporary name")
    first_name = first.name
    (root / first_name).write_bytes(b"left by a SIGKILLed attempt")

    with atomic_output(target) as tmp:
        assert tmp.name == first_name and not tmp.exists()
        tmp.write_bytes(b"whole")

    assert target.read_bytes() == b"whole" and list(root.glob(".*partial*")) == []


@pytest.mark.parametrize("uri", ["é" * 200 + ".tif", "x" * 300 + "/y.tif"])
def test_a_name_too_long_for_the_filesystem_is_a_field_error_not_a_crash(tmp_path: Path, uri: str) -> None:
    """Found by fuzzing (issue 14): ENAMETOOLONG used to escape as an OSError and crash the job."""
    for check in (lambda: resolve_in_workspace(uri, [tmp_path]), lambda: output_path(uri, [tmp_path], overwrite=False)):
        with pytest.raises(JobFailed) as refused:
            check()
        assert refused.value.code in ("path.invalid", "path.not_found") and refused.value.field in ("uri", "output")


@pytest.mark.parametrize("swap", [True, False], ids=["renameat2", "os.replace"])
def test_replacing_an_output_swaps_files_and_never_writes_into_the_one_a_reader_holds(
    root: Path, swap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not swap:
        monkeypatch.setattr(files, "_RENAMEAT2", None)  # a libc without renameat2: the same result by os.replace
    target, tmp = root / "out.tif", root / ".out.partial.tif"
    target.write_bytes(b"old")
    tmp.write_bytes(b"new")

    with target.open("rb") as reader:
        replace_file(tmp, target)
        assert reader.read() == b"old"

    assert target.read_bytes() == b"new" and not tmp.exists()


def test_replacing_onto_nothing_or_a_link_renames_and_leaves_the_links_target_alone(root: Path) -> None:
    (root / "elsewhere.tif").write_bytes(b"theirs")
    (root / "link.tif").symlink_to(root / "elsewhere.tif")
    for name in ("fresh.tif", "link.tif"):
        (root / "tmp.tif").write_bytes(b"new")
        replace_file(root / "tmp.tif", root / name)
        assert not (root / name).is_symlink() and (root / name).read_bytes() == b"new"
    assert (root / "elsewhere.tif").read_bytes() == b"theirs" and not (root / "tmp.tif").exists()


def test_a_folder_at_the_output_is_refused_and_stays_where_it_is(root: Path) -> None:
    (root / "out.tif").mkdir()
    (root / "out.tif" / "inside").write_bytes(b"x")
    (root / "tmp.tif").write_bytes(b"new")

    with pytest.raises(IsADirectoryError):
        replace_file(root / "tmp.tif", root / "out.tif")

    assert (root / "out.tif" / "inside").read_bytes() == b"x" and (root / "tmp.tif").read_bytes() == b"new"
