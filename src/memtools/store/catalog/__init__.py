"""What a memory folder says it holds: ``memtools.json`` (``manifest``), the per-video catalog
``videos.sqlite`` (``videos``, ``cells``) with its recording times and day and week nodes
(``video_times``, ``time_rows``, ``period_text``), why a video's build failed (``failures``), and an open
memory's parts as the integrity code and the writers see them (``parts``).

May import: ``memtools.store.base`` and the store's small shared modules only: the graph and the
lance tables build on the catalog, never the other way (import-linter contract ``store``)."""
