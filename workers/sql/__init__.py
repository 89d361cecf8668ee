"""`vector_sql`: a read-only DuckDB query over named workspace layers (guard, engine, answers)."""
