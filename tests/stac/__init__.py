"""A real STAC API for the tests and the demo: Sentinel-2-like COGs (`scenes`), an HTTP server for them that counts
the byte ranges it serves and a proxy that fails on purpose (`servers`), pgstac on a throwaway PostgreSQL cluster
behind stac-fastapi (`catalog`)."""
