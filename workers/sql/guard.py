"""What a `vector_sql` query may be: one SELECT reading only its named layers, checked on DuckDB's own parse tree.

The query is split into statements by DuckDB's parser (`extract_statements`): exactly one, of type SELECT, so
COPY, ATTACH, INSTALL, LOAD, PRAGMA, SET, EXPORT, CREATE … never reach execution. Its parse tree
(`json_serialize_sql`) is then walked: every table it reads must be one of the layers or a CTE of the query (a
quoted file path is a table name and is refused), DESCRIBE, SHOW and SUMMARIZE are refused, and every table
function must be one of `TABLE_FUNCTIONS`, so `read_csv`, `read_parquet`, `ST_Read`, `glob`, `read_text`,
`duckdb_settings` … are refused. The connection the query then runs on cannot reach files anyway
(`workers.sql.engine`).
"""

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from workers.jobkit.errors import JobFailed

TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
"""Table functions a query may call: none of them reads a file or the database's state."""


_PARSER = {"autoinstall_known_extensions": False, "autoload_known_extensions": False, "enable_external_access": False}


def _serialized(con: duckdb.DuckDBPyConnection, query: str) -> str:
    row = con.execute("SELECT json_serialize_sql($1::VARCHAR)", [query]).fetchone()
    return str(row[0]) if row else "{}"


def _refused(message: str) -> JobFailed:
    return JobFailed("query.refused", f"query: {message}", field="query")


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object of a parse tree, depth first."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _ctes(tree: Any) -> set[str]:
    names: set[str] = set()
    for node in _nodes(tree):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            names.update(str(entry.get("key", "")).lower() for entry in cte_map.get("map", []))
    return names


def check_query(query: str, layers: set[str]) -> None:
    """Refuse `query` unless it is one SELECT whose tables are `layers` (or its own CTEs) and whose table
    functions are harmless (`TABLE_FUNCTIONS`). Parsed on a connection of its own, before any layer is read.

    Raises:
        JobFailed: `query.invalid` (DuckDB cannot parse it; its message), `query.refused` (what is not allowed).
    """
    with duckdb.connect(":memory:", config=_PARSER) as con:
        try:
            statements = con.extract_statements(query)
            serialized = _serialized(con, query) if len(statements) == 1 else "{}"
        except duckdb.Error as exc:
            raise JobFailed("query.invalid", f"query: {exc}", field="query") from exc
    if len(statements) != 1:
        raise _refused(f"give exactly one statement, not {len(statements)}")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise _refused(f"only a SELECT may run, not {statements[0].type.name}")
    tree = json.loads(serialized)
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        raise _refused(str(tree.get("error_message") or "only a single SELECT may run"))
    allowed = {name.lower() for name in layers} | _ctes(tree)
    for node in _nodes(tree):
        kind = node.get("type")
        if kind == "BASE_TABLE":
            _check_table(node, allowed, layers)
        elif kind == "SHOW_REF":  # DESCRIBE, SHOW, SUMMARIZE: the database's catalog, not the layers
            raise _refused("DESCRIBE, SHOW and SUMMARIZE are not allowed; the result lists each column's type")
        elif kind == "TABLE_FUNCTION":
            function = node.get("function") or {}
            name = str(function.get("function_name", "")).lower()
            if name not in TABLE_FUNCTIONS or function.get("schema") or function.get("catalog"):
                raise _refused(
                    f"the table function {name!r} is not allowed; read the layers by their names "
                    f"({', '.join(sorted(layers))})"
                )


def _check_table(node: dict[str, Any], allowed: set[str], layers: set[str]) -> None:
    name = str(node.get("table_name", ""))
    if node.get("schema_name") or node.get("catalog_name") or name.lower() not in allowed:
        shown = ".".join(str(p) for p in (node.get("catalog_name"), node.get("schema_name"), name) if p)
        raise _refused(f"{shown!r} is not one of the layers given ({', '.join(sorted(layers))})")
