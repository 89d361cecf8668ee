"""Issue 14: secrets are masked before an event is appended (one place: the store's append and `request_event`)."""

import pytest

from geogate.calls import keys
from geogate.calls.publish import enqueue_op, request_event
from geogate.calls.store import EventStore
from geogate.eventlog.redaction import MASK, redact, redact_text, register_secret
from schemas.tools import TOOLS

SECRETS = [
    ("Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234"),
    ("use key sk-proj-AbCdEfGhIjKlMnOpQrStUv please", "sk-proj-AbCdEfGhIjKlMnOpQrStUv"),
    ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("https://alice:s3cr3t-pass@example.com/data.tif", "s3cr3t-pass"),
    ("https://h/x.tif?api_key=QWERTY123456&x=1", "QWERTY123456"),
    ('{"password": "hunter2hunter2"}', "hunter2hunter2"),
    ("AKIAABCDEFGHIJKLMNOP is the key id", "AKIAABCDEFGHIJKLMNOP"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlX2hlcmU", "eyJzdWIiOiJ4In0"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("x-api-key: 0123456789abcdef", "0123456789abcdef"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secret_shaped_text_is_masked(text: str, secret: str) -> None:
    masked = redact_text(text)

    assert secret not in masked and MASK in masked


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=100 and prompt_tokens: 20",
        "sha256:" + "ab" * 32,
        "EPSG:3857 bilinear, 30 m pixels, keyboard",
        "/work/data/dem.tif",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_values_under_secret_keys_are_masked_whatever_their_shape() -> None:
    value = {"api_key": "x1", "nested": [{"db_password": 42, "X-Api-Key": "k"}], "tokens": 5, "name": "n"}

    assert redact(value) == {
        "api_key": MASK,
        "nested": [{"db_password": MASK, "X-Api-Key": MASK}],
        "tokens": 5,
        "name": "n",
    }


def test_registered_secrets_are_masked_in_any_shape() -> None:
    register_secret("plain-but-secret-value")

    assert redact_text("the provider said: bad key plain-but-secret-value") == f"the provider said: bad key {MASK}"


def test_an_unchanged_value_is_the_same_object() -> None:
    value = {"uri": "dem.tif", "bands": [1, 2]}

    assert redact(value) is value


def test_a_key_in_the_arguments_never_reaches_the_log_or_the_queue_message(fake_store: EventStore) -> None:
    """The acceptance check: append a call whose arguments carry a key, then grep everything Redis holds."""
    key = "sk-live-0123456789abcdefghij"
    handler = {"language": "python", "script": f"# api_key={key}\nresult = 1"}
    event = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id="c1", actor="a", result_handler=handler)

    fake_store.append(event, keys.requested_key("c1"), effects=[enqueue_op(event)])

    redis = fake_store.redis
    dump = b"".join(
        b"".join(v for _id, fields in redis.xrange(k) for kv in fields.items() for v in kv)
        if redis.type(k) == b"stream"
        else b"".join(redis.lrange(k, 0, -1)) if redis.type(k) == b"list"
        else b"".join(x for kv in redis.hgetall(k).items() for x in kv) if redis.type(k) == b"hash"
        else (redis.get(k) or b"") if redis.type(k) == b"string" else b""
        for k in redis.scan_iter()
    )  # fmt: skip
    assert key.encode() not in dump and MASK.encode() in dump
