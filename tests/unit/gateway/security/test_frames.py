"""Malformed JSON-RPC frames are answered naming the member at fault (found by fuzzing, issue 14)."""

import json

import pytest

from gateway.security.frames import check_body


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        (b"", "body", -32700),
        (b"\xff\xfe", "body", -32700),
        (b'{"jsonrpc": "2.0", "method": "ping", "params": {"\\ud800x": null}}', "body", -32700),
        (b"[" * 5000 + b"]" * 5000, "body", -32700),
        (b"null", "body", -32600),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', "body", -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', "jsonrpc", -32600),
        (b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', "id", -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', "id", -32600),
        (b'{"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {}}', "id", -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', "method", -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 5}', "params", -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}', "params.name", -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": []}}',
         "params.arguments", -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": {}}}', "params.uri", -32602),
    ],
)  # fmt: skip
def test_a_malformed_frame_gets_an_error_naming_the_member(body: bytes, field: str, code: int) -> None:
    _, error = check_body(body)

    assert error is not None and error.field == field and error.code == code
    answer = error.body()
    assert answer["error"]["data"]["field"] == field and json.dumps(answer)


@pytest.mark.parametrize(
    "frame",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "a", "result": {}},
        {"jsonrpc": "2.0", "id": 2**80, "method": "ping"},
    ],
)
def test_well_formed_frames_pass_to_the_sdk(frame: dict) -> None:
    parsed, error = check_body(json.dumps(frame).encode())

    assert error is None and parsed == frame
