"""Who may call what and how much. Auth (SDK verifiers), scopes, limits, Host/Origin, body size."""
