"""Rendering results: the Markdown report, SVG charts, CSV and the files a run writes."""
