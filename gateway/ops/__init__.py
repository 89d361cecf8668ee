"""`/ops`: the operator's dashboard over the event log (pages, live stream, static assets) and the figures it shows."""
