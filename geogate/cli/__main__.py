"""`python -m geogate.cli`: the `geogate` command where its script is not installed."""

from geogate.cli.main import main

main()
