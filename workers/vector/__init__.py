"""Vector analysis on whole layers in memory (geopandas over Arrow reads): overlay, dissolve, spatial joins."""
