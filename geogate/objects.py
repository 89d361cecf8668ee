"""Object-storage workspaces: a `GEOGATE_WORKSPACES` entry `s3://bucket/prefix`, and how to reach its store.

The store's endpoint, region and credentials are `GEOGATE_S3_*` settings (`ObjectStoreSettings`), the credentials
also from a secrets file; every secret is registered with the log's redaction as it is read, so it never shows in
the log, an event, an error or a result. Workers reach the store through `workers.jobkit.objects`; the gateway only
needs to tell such an entry from a folder (`split_workspaces`).
"""

import functools
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from geogate.eventlog.redaction import register_secret
from geogate.settings import SettingsError

SCHEME = "s3://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_ENTRIES = re.compile(r":(?!//)")
"""`GEOGATE_WORKSPACES` is colon-separated; the colon of `s3://` does not separate."""


class ObjectStoreSettings(BaseSettings):
    """The S3-compatible store of the `s3://` workspace roots (`GEOGATE_S3_*`)."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_S3_", extra="ignore")

    endpoint_url: str | None = None
    """`http(s)://host:port` of an S3-compatible store (MinIO, Ceph, moto); unset: AWS's own endpoint."""
    region: str = "us-east-1"
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    secrets_file: Path | None = None
    """A file of `access_key_id=…` and `secret_access_key=…` lines, read when the variables are unset."""
    part_mb: int = Field(default=16, ge=5, le=5120)
    """Size of each part of an output's multipart upload (S3's minimum is 5 MiB)."""

    def credentials(self) -> tuple[str, str] | None:
        """The access key id and secret (from the variables, else the secrets file), registered as secrets; None
        when neither gives both (the client's own chain is used: instance roles, `~/.aws`)."""
        pairs = {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}
        found = {k: v.get_secret_value() for k, v in pairs.items() if v is not None}
        if len(found) < 2 and self.secrets_file is not None:
            found = _read_secrets(self.secrets_file) | found
        for value in found.values():
            register_secret(value)
        if "access_key_id" not in found or "secret_access_key" not in found:
            return None
        return found["access_key_id"], found["secret_access_key"]


def _read_secrets(path: Path) -> dict[str, str]:
    lines = path.expanduser().read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.lstrip().startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs if k.strip() in ("access_key_id", "secret_access_key")}


@functools.cache
def object_store_settings() -> ObjectStoreSettings:
    """This process's object-store settings, read from the environment once."""
    return ObjectStoreSettings()


@dataclass(frozen=True)
class ObjectRoot:
    """A workspace root in a bucket: every key a tool reads or writes there starts with `prefix/`."""

    bucket: str
    prefix: str
    """Without leading or trailing `/`; empty for the whole bucket."""

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, relative: PurePosixPath) -> str:
        """The object key of `relative` (a path below the root, already checked for `..`)."""
        if str(relative) == ".":
            return self.prefix
        return str(PurePosixPath(self.prefix) / relative) if self.prefix else str(relative)

    @classmethod
    def parse(cls, text: str) -> "ObjectRoot":
        """`s3://bucket/prefix` as a root.

        Raises:
            ValueError: not an `s3://` URI, a bucket name S3 refuses, or `..` or an empty part in the prefix.
        """
        if not text.startswith(SCHEME):
            raise ValueError(f"GEOGATE_WORKSPACES: {text!r} is not an s3:// root")
        bucket, _, prefix = text.removeprefix(SCHEME).partition("/")
        parts = prefix.strip("/").split("/") if prefix.strip("/") else []
        if not _BUCKET.match(bucket) or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"GEOGATE_WORKSPACES: {text!r} is not a usable s3://bucket/prefix root")
        return cls(bucket, "/".join(parts))


def split_workspaces(text: str) -> list[str | ObjectRoot]:
    """The entries of `GEOGATE_WORKSPACES` in order: folders as written, `s3://` roots parsed.

    Raises:
        ValueError: an `s3://` entry is not usable (`ObjectRoot.parse`).
    """
    entries = [part.strip() for part in _ENTRIES.split(text) if part.strip()]
    return [ObjectRoot.parse(e) if e.startswith(SCHEME) else e for e in entries]


def resolved_workspaces(text: str) -> list[str]:
    """The entries of `GEOGATE_WORKSPACES` as a child process should get them: folders resolved (links followed),
    `s3://` roots as they are, in order, without repeats."""
    entries = split_workspaces(text)
    return list(
        dict.fromkeys(e.uri if isinstance(e, ObjectRoot) else str(Path(e).expanduser().resolve()) for e in entries)
    )


def check_workspaces(text: str) -> None:
    """Refuse, at a worker's start, an unusable `s3://` root or object-store setting.

    Raises:
        SettingsError: the message names the variable (`GEOGATE_WORKSPACES: …`, `GEOGATE_S3_PART_MB: …`).
    """
    try:
        if any(isinstance(entry, ObjectRoot) for entry in split_workspaces(text)):
            object_store_settings()
    except ValidationError as exc:
        lines = [f"GEOGATE_S3_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()]
        raise SettingsError("invalid settings:\n  " + "\n  ".join(lines)) from None
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
