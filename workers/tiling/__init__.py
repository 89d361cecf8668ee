"""One large raster job across every worker: plan a grid of windows, run each as a child call, fan in on the log."""
