"""Preflight at the gateway: consequential calls need a cached justification, or one obtained in-call."""
