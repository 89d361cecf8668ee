"""`stac_search`'s work: pystac-client held to the allowed catalogs and retried (`io`), the search (`search`)."""
