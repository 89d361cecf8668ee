"""Keys and names live in the key modules (`geogate/eventlog/keys.py` for the store's, `geogate/calls/keys.py` for the
read models' and every dedupe key): nobody else spells a dedupe or projection key."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWNERS = {ROOT / "geogate" / "eventlog" / "keys.py", ROOT / "geogate" / "calls" / "keys.py"}
PACKAGES = ("geogate", "gateway", "workers", "schemas")
KEY_SHAPE = re.compile(r"^[a-z_]+:(?!//)[^ ]")
"""The start of a dedupe key (`justification:<hash>:expired:…`); aggregates (`call:<id>`) have one colon only."""


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _key_shaped(node: ast.JoinedStr) -> bool:
    text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return bool(KEY_SHAPE.match(text)) and text.count(":") >= 2 and isinstance(node.values[0], ast.Constant)


def spelled_keys(path: Path) -> list[str]:
    """Where `path` spells a key itself: an inline or key-shaped dedupe key, a `geogate:` literal, a `.key(…)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"append", "append_many"} and len(node.args) >= 2 and _is_text(node.args[1]):
                found.append(f"{where} dedupe key written inline")
            if node.func.attr == "key" and node.args and _is_text(node.args[0]):
                found.append(f"{where} projection key spelled with .key()")
            if node.func.attr in {"stream", "rate"} and node.args and _is_text(node.args[0]):
                found.append(f"{where} stream or scope name spelled in .{node.func.attr}()")
        if isinstance(node, ast.JoinedStr) and _key_shaped(node):
            found.append(f"{where} key-shaped text {ast.unparse(node)}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.match(r"geogate:[^ ]", node.value):
            found.append(f"{where} key literal {node.value!r}")
    return found


def test_no_module_but_the_key_modules_spells_a_dedupe_or_projection_key() -> None:
    offenders = {
        str(path.relative_to(ROOT)): hits
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path not in OWNERS and (hits := spelled_keys(path))
    }
    assert offenders == {}


def test_the_scan_sees_each_way_of_spelling_a_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'store.append(event, f"justification:{h}:expired:{ts}")\n'
        'key = f"workflow:{state_id}:v{version}"\n'
        'keys.key("handler", call_id)\n'
        'X = "geogate:p:x"\n'
        'reader = keys.stream("calls")\n'
        'fine = f"{code}: {message}", f"call:{call_id}", f"compression: not {driver}"\n'
    )
    assert sorted(hit.split(" ", 1)[1] for hit in spelled_keys(bad)) == [
        "dedupe key written inline",
        "key literal 'geogate:p:x'",
        "key-shaped text f'justification:{h}:expired:{ts}'",
        "key-shaped text f'workflow:{state_id}:v{version}'",
        "projection key spelled with .key()",
        "stream or scope name spelled in .stream()",
    ]
