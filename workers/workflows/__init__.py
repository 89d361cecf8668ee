"""Guided workflows (docs/workflows.md): YAML definitions, the `${…}` template language, state as a fold of events."""
