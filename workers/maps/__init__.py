"""Static maps: several raster and vector layers drawn with matplotlib (Agg) into one PNG (`map_image`)."""
