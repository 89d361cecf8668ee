"""Workspace scoping and atomic outputs (written to a temp file and renamed into place)."""

import hashlib
import os
import threading
from pathlib import Path

import pytest

from workers.jobkit import files
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path, replace_file, resolve_in_workspace
from workers.jobkit.write_digest import WriteDigest


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


def written_through(digest: WriteDigest, *writes: tuple[int, bytes]) -> str | None:
    with digest.opener(digest.path, "wb") as handle:
        for offset, data in writes:
            handle.seek(offset)
            handle.write(data)
    return digest.hexdigest()


def test_a_file_written_front_to_back_is_digested_as_it_is_written(root: Path) -> None:
    digest = WriteDigest(root / "out.tif")

    got = written_through(digest, (0, b"header"), (6, b"x" * 300_000), (300_006, b"tail"))

    assert got == hashlib.sha256((root / "out.tif").read_bytes()).hexdigest()


def test_the_digest_is_hashed_beside_the_writer_and_its_thread_ends_with_the_handle(root: Path) -> None:
    digest = WriteDigest(root / "out.tif")
    handle = digest.opener(digest.path, "wb")
    hashers = [t for t in threading.enumerate() if t.name == "write-digest"]
    handle.write(b"x" * 300_000)

    assert digest.hexdigest() is None  # still open: more may come
    handle.close()
    handle.close()  # twice, as io's finalizer may
    assert digest.hexdigest() == hashlib.sha256(b"x" * 300_000).hexdigest()
    assert hashers and not any(t.is_alive() for t in hashers)


def test_a_writer_ahead_of_the_hashing_by_its_backlog_waits_and_the_digest_holds(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WriteDigest, "BACKLOG", 1)  # every write waits for the one before to be hashed
    writes = [(i * 70_000, bytes([i]) * 70_000) for i in range(40)]

    got = written_through(WriteDigest(root / "out.tif"), *writes)

    assert got == hashlib.sha256(b"".join(data for _, data in writes)).hexdigest()


def test_a_file_patched_behind_its_end_or_truncated_has_no_digest(root: Path) -> None:
    """A writer that goes back to fill in a header leaves the caller to read the file."""
    assert written_through(WriteDigest(root / "a.tif"), (0, b"0000body"), (0, b"head")) is None
    assert written_through(WriteDigest(root / "b.tif"), (4, b"body")) is None
    digest = WriteDigest(root / "c.tif")
    with digest.opener(digest.path, "wb") as handle:
        handle.write(b"body")
        handle.truncate(2)
    assert digest.hexdigest() is None


def test_a_second_handle_or_a_write_behind_the_openers_back_voids_the_digest(root: Path) -> None:
    twice = WriteDigest(root / "a.tif")
    written_through(twice, (0, b"one"))
    assert written_through(twice, (0, b"two")) is None

    behind = WriteDigest(root / "b.tif")
    written_through(behind, (0, b"body"))
    with open(root / "b.tif", "ab") as other:
        other.write(b"more")
    assert behind.hexdigest() is None


def test_the_opener_opens_other_files_as_they_are(root: Path) -> None:
    digest = WriteDigest(root / "out.tif")
    (root / "out.tif.aux.xml").write_bytes(b"<PAMDataset/>")
    with digest.opener(os.fspath(root / "out.tif.aux.xml")) as sidecar:
        assert sidecar.read() == b"<PAMDataset/>"
    with pytest.raises(FileNotFoundError):
        digest.opener(root / "out.tif", "rb")


def test_missing_folders_of_an_output_are_created_inside_the_root(root: Path) -> None:
    assert output_path("new/deeper/out.tif", [root], overwrite=False) == root / "new" / "deeper" / "out.tif"
    assert (root / "new" / "deeper").is_dir()
    assert output_path(str(root / "abs" / "out.tif"), [root], overwrite=False) == root / "abs" / "out.tif"
    assert (root / "abs").is_dir()


def test_no_folder_is_made_through_a_link_or_outside_the_roots(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "afile").write_text("x")

    assert code_of(output_path, "link/sub/out.tif", [root], overwrite=False) == ("path.outside_workspace", "output")
    absolute = str(outside / "sub" / "out.tif")
    assert code_of(output_path, absolute, [root], overwrite=False) == ("path.outside_workspace", "output")
    assert code_of(output_path, "afile/sub/out.tif", [root], overwrite=False) == ("path.invalid", "output")
    assert list(outside.iterdir()) == [] and not (root / "afile" / "sub").exists()


def test_a_link_swapped_in_for_a_folder_level_stops_the_creation(root: Path, tmp_path: Path) -> None:
    """The levels are opened without following links: a link made after the path was resolved is not followed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)

    with pytest.raises(JobFailed) as caught:
        files.make_folders(root / "out" / "sub", [root])

    assert (caught.value.code, caught.value.field) == ("path.invalid", "output")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("uri", ["https://example.org/out.tif", "s3://bucket/out.tif", "HTTP://host:8080/a.tif"])
def test_an_output_url_is_refused_and_makes_no_folder(root: Path, uri: str) -> None:
    assert code_of(output_path, uri, [root], overwrite=False) == ("path.outside_workspace", "output")
    assert sorted(p.name for p in root.iterdir()) == ["a.tif"]
