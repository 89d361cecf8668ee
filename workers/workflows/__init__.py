"""Guided workflows (seed 002): YAML definitions, the `${…}` template language, state as a fold of events."""
