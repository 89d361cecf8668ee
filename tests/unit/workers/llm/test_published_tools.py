"""The server's model may call only what the deployment publishes (`GEOGATE_TOOLSETS`), as a client may."""

from geogate.settings import Settings
from workers.llm.job import published_specs, tool_definitions


def test_the_model_is_offered_the_published_tools_only() -> None:
    default = {tool["name"] for tool in tool_definitions(published_specs(Settings(redis_url="redis://unused")))}
    every = {tool["name"] for tool in tool_definitions(published_specs(Settings(redis_url="r", toolsets=["all"])))}

    assert "raster_info" in default and "submitThought" not in default and "ask" not in default
    assert {"submitThought", "list_workflows", "raster_info"} <= every
