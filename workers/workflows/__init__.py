"""Guided workflows (docs/workflows.md): YAML definitions, Jinja2 templates, state as a fold of events."""
