"""Publishing an output written in an object root's mirror: a multipart upload completed last.

S3 shows an object only once `CompleteMultipartUpload` has run, so the object appears whole or not at all; a
failure or a cancellation before it aborts the upload and leaves nothing. Without `overwrite` the completion is
conditional (`If-None-Match: *`): an object another call published meanwhile is not replaced. The sha256 of the
bytes goes with the object as its `sha256` metadata, so a later job that reads it notes the digest (provenance)
without reading it whole.
"""

import contextlib
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workers.jobkit import objects
from workers.jobkit.errors import JobFailed

if TYPE_CHECKING:
    from workers.jobkit.context import Fence


def note_output(path: Path, overwrite: bool) -> None:
    """Remember that output `path` (a mirror path `output_path` let through) may or may not replace an object."""
    mount = objects.mount_of(path)
    if mount is not None:
        mount.overwrite[path] = overwrite


def publish(target: Path, sidecars: list[Path], fence: "Fence | None" = None) -> None:
    """Upload `target` (a file just renamed into place in a mirror) and its `sidecars`, the sidecars first; nothing
    for a path of a folder root. On any failure what this publish uploaded is removed, and so is the local file.

    Raises:
        JobFailed: `output.exists` (an object appeared at the key meanwhile, without overwrite), `storage.failed`;
            JobSuperseded: the fence says another attempt is current (checked before the completion).
    """
    mount = objects.mount_of(target)
    if mount is None:
        return
    overwrite = mount.overwrite.get(target, True)
    done: list[str] = []
    try:
        for side in sidecars:
            done.append(_upload(mount, side, overwrite=True, fence=fence))
        _upload(mount, target, overwrite=overwrite, fence=fence)
    except BaseException:
        for key in done:
            with contextlib.suppress(Exception):
                mount.client.delete_object(Bucket=mount.root.bucket, Key=key)
        for path in [*sidecars, target]:
            path.unlink(missing_ok=True)
        raise


def _upload(mount: objects.Mount, path: Path, *, overwrite: bool, fence: "Fence | None") -> str:
    key, bucket = mount.key(path), mount.root.bucket
    with objects.storage_errors("output"):
        upload = mount.client.create_multipart_upload(Bucket=bucket, Key=key, Metadata={"sha256": _sha256(path)})
    ids = {"Bucket": bucket, "Key": key, "UploadId": upload["UploadId"]}
    try:
        with objects.storage_errors("output"):
            parts = _parts(mount.client, ids, path, mount.settings.part_mb << 20)
        if fence is not None:
            fence.check()
        _complete(mount.client, ids, parts, overwrite, objects.shown(path))
    except BaseException:
        with contextlib.suppress(Exception):
            mount.client.abort_multipart_upload(**ids)
        raise
    mount.heads.pop(key, None)
    return key


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _parts(s3: Any, ids: dict[str, str], path: Path, size: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        while True:
            chunk = handle.read(size)
            if parts and not chunk:
                return parts
            answer = s3.upload_part(PartNumber=len(parts) + 1, Body=chunk, **ids)
            parts.append({"ETag": answer["ETag"], "PartNumber": len(parts) + 1})
            if len(chunk) < size:
                return parts


def _complete(s3: Any, ids: dict[str, str], parts: list[dict[str, Any]], overwrite: bool, shown: str) -> None:
    from botocore.exceptions import ClientError

    condition = {} if overwrite else {"IfNoneMatch": "*"}
    try:
        with objects.storage_errors("output"):
            s3.complete_multipart_upload(MultipartUpload={"Parts": parts}, **ids, **condition)
    except JobFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, ClientError) and cause.response.get("Error", {}).get("Code") == "PreconditionFailed":
            message = f"output: {shown!r} exists; pass overwrite=true to replace it"
            raise JobFailed("output.exists", message, field="output") from exc
        raise
