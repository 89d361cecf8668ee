"""Secrets never reach the log or a client: API keys, bearer tokens, passwords and credentials are masked.

Applied to every event before it is appended (and before its queue message is built) and to every error the
gateway returns. Three nets: values under secret-sounding keys (`api_key`, `password`, `authorization`, …),
secret-shaped text anywhere in a string (`Bearer …`, `sk-…`, JWTs, AWS keys, private-key blocks, `user:pass@` in
URLs, `token=…` in queries and headers), and the exact values this process knows to be secret (the LLM provider key,
static client tokens), whatever their shape.
"""

import functools
import re
from typing import Any

from pydantic import BaseModel

from schemas.events import Event

MASK = "[redacted]"
MIN_KNOWN_SECRET = 6
"""Shorter registered values are not masked by value (they would mask ordinary words)."""

_SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:api[_\-]?key|apikey|x[_\-]api[_\-]key|password|passwd|passphrase|secret|client[_\-]?secret"
    r"|token|access[_\-]?token|refresh[_\-]?token|id[_\-]?token|session[_\-]?token|auth[_\-]?token|authorization"
    r"|credentials?|private[_\-]?key|secret[_\-]?access[_\-]?key|cookie|set[_\-]cookie)$",
    re.IGNORECASE,
)
"""A mapping key whose value is a secret (`api_key`, `X-Api-Key`, `db_password`, `aws_secret_access_key`)."""

_NAMED = (
    r"authorization|proxy-authorization|x-api-key|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token"
    r"|auth[_-]?token|session[_-]?token|token|password|passwd|pwd|secret|client[_-]?secret|private[_-]?key"
    r"|aws_secret_access_key|x-amz-signature|x-amz-security-token|x-goog-signature|signature|sig"
)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"), MASK),
    # `Authorization: Bearer x`, `"password": "x"`, `api_key=x` (queries, headers, JSON text, code)
    (
        re.compile(
            rf"""(?i)(?<![\w-])((?:{_NAMED})["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"'&,;}}<>]+"""
        ),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"), rf"\1 {MASK}"),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), MASK),  # JWT
    (re.compile(r"\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}"), MASK),  # OpenAI, Anthropic, Stripe
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), MASK),  # GitHub
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),  # AWS access key id
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), MASK),  # Google API key
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), MASK),  # Slack
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]+):[^/\s@]+@"), rf"\1:{MASK}@"),  # user:password@host
)

_CUES = re.compile(
    r"bearer|basic|[srp]k-|eyj|gh[pousr]_|github_pat|akia|asia|aiza|xox|private key|://|auth|key|token"
    r"|pass|pwd|secret|sig|cookie"
)
"""Lower-cased text with none of these cannot match a pattern: one cheap search spares the ten patterns."""

_known: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask `value` wherever it appears from now on (a provider key, a client token this process holds)."""
    if value and len(value) >= MIN_KNOWN_SECRET:
        _known.add(value)


def redact_text(text: str) -> str:
    """`text` with every secret-shaped part and every registered secret masked."""
    for value in _known:
        if value in text:
            text = text.replace(value, MASK)
    if not _CUES.search(text.lower()):
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact(value: Any) -> Any:
    """A copy of a JSON-like value (or pydantic model) with secrets masked; the same object when nothing was."""
    return _clean(value)[0]


def redact_event(event: Event) -> Event:
    """The event with secrets masked in its payload (the same object when it carries none)."""
    data, changed = _clean(event.data)
    return event.model_copy(update={"data": data}) if changed else event


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (its value is masked whole)."""
    return bool(_SECRET_KEY.search(key))


def _clean(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        masked = redact_text(value)
        return masked, masked != value
    if isinstance(value, dict):
        return _clean_mapping(value)
    if isinstance(value, list | tuple):
        items = [_clean(v) for v in value]
        if not any(changed for _, changed in items):
            return value, False
        return type(value)(v for v, _ in items), True
    if isinstance(value, BaseModel):
        return _clean_model(value)
    return value, False


def _clean_mapping(value: dict[Any, Any]) -> tuple[dict[Any, Any], bool]:
    out: dict[Any, Any] = {}
    changed = False
    for key, item in value.items():
        if isinstance(key, str) and is_secret_key(key) and item not in (None, "", MASK):
            out[key], changed = MASK, True
            continue
        out[key], item_changed = _clean(item)
        changed = changed or item_changed
    return (out, True) if changed else (value, False)


def _clean_model(model: BaseModel) -> tuple[BaseModel, bool]:
    updates: dict[str, Any] = {}
    for name in type(model).model_fields:
        if name == "type":  # the event type literal
            continue
        item = getattr(model, name)
        if is_secret_key(name) and isinstance(item, str) and item not in ("", MASK):
            updates[name] = MASK
            continue
        cleaned, changed = _clean(item)
        if changed:
            updates[name] = cleaned
    return (model.model_copy(update=updates), True) if updates else (model, False)
