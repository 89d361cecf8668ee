"""`python -m gateway [--stdio] [--port N] [--host H]`: the gateway role's entry point (what `geogate gateway` and
`geogate dev` run)."""

import argparse
import sys

from geogate.settings import SettingsError, process_settings


def main(argv: list[str] | None = None) -> None:
    """Serve MCP over HTTP (or on stdin/stdout with `--stdio`) until stopped; a settings error ends it with its
    message and status 1."""
    parser = argparse.ArgumentParser(prog="geogate gateway", description="Run the Geogate gateway.")
    parser.add_argument("--stdio", action="store_true", help="serve MCP on stdin/stdout (desktop hosts)")
    parser.add_argument("--port", type=int, default=None, help="HTTP port")
    parser.add_argument("--host", default=None, help="interface to bind")
    ns = parser.parse_args(argv)
    try:
        settings = process_settings()
        updates = {k: v for k, v in (("port", ns.port), ("host", ns.host)) if v is not None}
        settings = settings.model_copy(update=updates) if updates else settings
        if ns.stdio:
            from gateway.server import build_server

            server, _ = build_server(settings)
            server.run("stdio")
            return
        from gateway.app import serve

        serve(settings)
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    main(sys.argv[1:])
