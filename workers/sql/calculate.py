"""`vector_calculate`: keep the features a `where` expression selects and compute fields, in DuckDB.

Each expression is parsed by DuckDB (`SELECT (<expression>)`) and its tree checked against an allow-list: the
expression kinds of `EXPRESSIONS` (columns, constants, arithmetic, comparisons, AND/OR/NOT, IN, BETWEEN, LIKE,
IS NULL, CASE, CAST) and the per-feature functions of `FUNCTIONS`; subqueries, aggregates, window functions,
lambdas and every other function are refused naming the argument, as is a column the layer does not have. The
query built from them is checked the same way as a whole before it runs on the locked connection of
`workers.sql.engine`, so nothing an expression spells can make it read another table or a file.
"""

import json
from typing import Any

import duckdb

from schemas.tools.sql import VectorCalculateArgs, VectorCalculateResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import output_path, resolve_in_workspace
from workers.sql.answer import write_rows
from workers.sql.engine import connection, run_query

TABLE = "layer"
QUERY_SECONDS = 3000.0
"""The query's time limit: inside the tool's own timeout, with room to read the layer and write the output."""
EXPRESSIONS = frozenset(
    {"BETWEEN", "CASE", "CAST", "COLUMN_REF", "COMPARISON", "CONJUNCTION", "CONSTANT", "FUNCTION", "OPERATOR"}
)
"""The expression classes of DuckDB's parse tree an expression may hold."""
OPERATORS = frozenset({"+", "-", "*", "/", "//", "%", "^", "**", "||", "~~", "!~~", "~~*", "!~~*"})
"""Operators (arithmetic, concatenation, LIKE and ILIKE), which DuckDB parses as functions."""
GEODESIC = {
    "area_m2": "ST_Area_Spheroid",
    "length_m": "ST_Length_Spheroid",
    "perimeter_m": "ST_Perimeter_Spheroid",
}
"""The ellipsoid measures, in m² and m on WGS 84 whatever the layer's CRS, and the spatial functions behind them."""
FUNCTIONS = frozenset(
    {
        *OPERATORS,
        *GEODESIC,
        *("abs", "round", "floor", "ceil", "sqrt", "power", "pow", "exp", "ln", "log", "log10", "log2", "sign"),
        *("least", "greatest", "coalesce", "nullif", "ifnull", "mod", "pi", "radians", "degrees"),
        *("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "isnan", "isfinite"),
        *("lower", "upper", "length", "concat", "concat_ws", "substr", "substring", "trim", "ltrim", "rtrim"),
        *(
            "replace",
            "starts_with",
            "ends_with",
            "contains",
            "left",
            "right",
            "lpad",
            "rpad",
            "strpos",
            "regexp_matches",
        ),
        *("regexp_replace", "regexp_extract", "year", "month", "day", "strftime", "strptime", "date_part"),
        *("st_area", "st_length", "st_perimeter", "st_npoints", "st_numgeometries", "st_geometrytype", "st_isvalid"),
        *("st_isempty", "st_issimple", "st_x", "st_y", "st_xmin", "st_xmax", "st_ymin", "st_ymax", "st_centroid"),
        *("st_pointonsurface", "st_envelope", "st_convexhull", "st_buffer", "st_simplify", "st_makevalid"),
        *("st_intersects", "st_within", "st_contains", "st_touches", "st_crosses", "st_overlaps", "st_disjoint"),
        *("st_covers", "st_coveredby", "st_dwithin", "st_distance", "st_intersection", "st_difference"),
        *("st_geomfromtext", "st_geomfromgeojson", "st_point", "st_makeenvelope", "st_astext", "st_asgeojson"),
    }
)
"""Per-feature functions an expression may call (lower case)."""


def _refused(field: str, message: str) -> JobFailed:
    return JobFailed("expression.refused", f"{field}: {message}", field=field)


def _tree(con: duckdb.DuckDBPyConnection, sql: str, field: str) -> dict[str, Any]:
    try:
        statements = con.extract_statements(sql)
        row = con.execute("SELECT json_serialize_sql($1::VARCHAR)", [sql]).fetchone()
    except duckdb.Error as exc:
        raise JobFailed("expression.invalid", f"{field}: {exc}", field=field) from exc
    tree = json.loads(str(row[0]) if row else "{}")
    if len(statements) != 1 or tree.get("error") or len(tree.get("statements", [])) != 1:
        raise _refused(field, str(tree.get("error_message") or "give one expression"))
    return tree["statements"][0]["node"]


def _check(node: Any, field: str, columns: set[str]) -> None:
    """Refuse anything in an expression tree outside `EXPRESSIONS`, `FUNCTIONS` and `columns`."""
    if isinstance(node, list):
        for item in node:
            _check(item, field, columns)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("class")
    if kind is not None:
        if kind not in EXPRESSIONS:
            raise _refused(field, f"{str(node.get('type', kind)).lower()} is not allowed in an expression")
        if kind == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if name not in FUNCTIONS or node.get("schema") or node.get("catalog") or node.get("filter"):
                raise _refused(field, f"the function {name!r} is not allowed; see the tool's description")
        if kind == "COLUMN_REF":
            name = ".".join(str(part) for part in node.get("column_names", []))
            if name.lower() not in columns:
                message = f"the layer has no field {name!r}; it has {', '.join(sorted(columns))}"
                raise JobFailed("field.not_found", f"{field}: {message}", field=field)
    for value in node.values():
        _check(value, field, columns)


def check_expression(con: duckdb.DuckDBPyConnection, text: str, field: str, columns: set[str]) -> str:
    """`text` parenthesised on lines of its own, once DuckDB parses it as one allowed expression over `columns`.

    Raises:
        JobFailed: `expression.invalid` (DuckDB's parse error), `expression.refused`, `field.not_found`.
    """
    wrapped = f"(\n{text}\n)"
    node = _tree(con, f"SELECT {wrapped}", field)
    extra = [key for key in ("where_clause", "having", "qualify", "sample") if node.get(key)]
    if node.get("type") != "SELECT_NODE" or len(node.get("select_list", [])) != 1 or extra or node.get("modifiers"):
        raise _refused(field, "give one expression, not a query")
    if node.get("from_table", {}).get("type") != "EMPTY" or node.get("group_expressions"):
        raise _refused(field, "give one expression, not a query")
    _check(node["select_list"], field, columns)
    return wrapped


def _macros(con: duckdb.DuckDBPyConnection, crs: str | None) -> None:
    """Define `GEODESIC`'s measures for geometries in `crs`: moved to WGS 84, latitude first, as the spheroid
    functions take them."""
    to_wgs84 = (
        "g"
        if crs in (None, "EPSG:4326")
        else f"ST_Transform(g, '{crs.replace(chr(39), chr(39) * 2)}', 'EPSG:4326', always_xy := true)"
    )
    for name, function in GEODESIC.items():
        con.execute(f"CREATE MACRO {name}(g) AS {function}(ST_FlipCoordinates({to_wgs84}))")


def _query(args: VectorCalculateArgs, con: duckdb.DuckDBPyConnection, columns: list[str]) -> str:
    known = {c.lower() for c in columns}
    replaced = [n for n in args.fields if n.lower() in known]
    added = [n for n in args.fields if n.lower() not in known]
    computed = {n: check_expression(con, e, f"fields.{n}", known) for n, e in args.fields.items()}
    select = "*"
    if replaced:
        select += " REPLACE (" + ", ".join(f'{computed[n]} AS "{n}"' for n in replaced) + ")"
    select += "".join(f', {computed[n]} AS "{n}"' for n in added)
    where = f" WHERE {check_expression(con, args.where, 'where', known)}" if args.where is not None else ""
    query = f'SELECT {select} FROM "{TABLE}"{where}'
    node = _tree(con, query, "fields" if args.fields else "where")  # the whole, as it will run
    if node.get("from_table", {}).get("type") != "BASE_TABLE" or node["from_table"].get("table_name") != TABLE:
        raise _refused("fields" if args.fields else "where", "the expressions must not change the query's shape")
    for item in node.get("select_list", []):
        if item.get("class") == "STAR" and not item.get("exclude_list") and item.get("expr") is None:
            _check(item.get("replace_list", []), "fields", known)
        else:
            _check(item, "fields", known)
    _check(node.get("where_clause"), "where", known)
    return query


def vector_calculate(args: VectorCalculateArgs, ctx: JobContext) -> VectorCalculateResult:
    """Keep the features `args.where` selects and add or replace `args.fields`, writing the layer to `args.output`.

    Raises:
        JobFailed: an expression refused, unparsable or naming a missing field (`where`, `fields.<name>`); what
            reading the layer or writing the output raises.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src = resolve_in_workspace(args.uri, ctx.roots)
    output_path(args.output, ctx.roots, overwrite=args.overwrite)
    with connection({TABLE: (src, args.layer)}, ctx) as (con, loaded):
        columns = [str(row[0]) for row in con.execute(f'DESCRIBE "{TABLE}"').fetchall()]
        _macros(con, loaded[0].crs)
        kinds, table = run_query(con, _query(args, con, columns), 2**62, QUERY_SECONDS, ctx, 0.5)
    written = write_rows(args.output, args.driver, args.overwrite, table, kinds, loaded[0].crs, ctx)
    known = {c.lower() for c in columns}
    return VectorCalculateResult(
        **written,
        feature_count=table.num_rows,
        source_feature_count=loaded[0].feature_count,
        added=[n for n in args.fields if n.lower() not in known],
        replaced=[n for n in args.fields if n.lower() in known],
    )
