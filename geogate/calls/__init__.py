"""The calls' read models, kept by the event store they are handed to (docs/layout.md).

`geogate.calls.store` gives `geogate.eventlog`'s store the calls' key builders (`keys`) and projectors
(`projections`, the tiled calls' `fan_in`, the `ops_feed` summary); `publish` builds a call's request and its queue
message, `held` the arguments kept beside the log. The store imports nothing from here.
"""
