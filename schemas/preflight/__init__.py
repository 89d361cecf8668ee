"""The preflight domain, pure: which justifications a call needs (`keys`), the prompts that ask for them
(`prompts`), how a model's answer is read (`answers`) and what the gate decides from the cache (`gate`).

Both sides use it: the gateway gates a client's calls, workers gate the calls they make themselves (`ask`, result
handlers). The event store (`geogate/eventlog/`) knows none of it.
"""
