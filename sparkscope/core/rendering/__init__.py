"""Everything printed: rendering, results, charts, the :watch dashboard, live output above the prompt."""
