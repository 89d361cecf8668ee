"""The `-c` program that starts the sandbox server: the `inner` package shipped as source, no files needed."""

import ast
from functools import cache
from pathlib import Path

PACKAGE = "geogate_inner"
INNER = Path(__file__).with_name("inner")

_TEMPLATE = """
import sys
from importlib.machinery import ModuleSpec
SOURCES = {sources!r}
class Loader:
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        exec(compile(SOURCES[module.__name__], "<sandbox>/" + module.__name__ + ".py", "exec"), module.__dict__)
class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in SOURCES:
            return ModuleSpec(name, Loader(), is_package=name == {package!r})
        return None
sys.meta_path.insert(0, Finder)
import {package}.server
{package}.server.main()
"""


@cache
def server_program() -> str:
    """Python source for `python -c`: registers the inner modules from memory, then runs the server."""
    sources = {}
    for path in sorted(INNER.glob("*.py")):
        name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        sources[name] = path.read_text()
    return _TEMPLATE.format(sources=sources, package=PACKAGE)


@cache
def required_modules() -> tuple[str, ...]:
    """The standard-library modules a handler needs: every one the sandbox server imports (read from its sources),
    and `json`, which handlers use to read and shape their output."""
    names = {"json"}
    for path in INNER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return tuple(sorted(names))
