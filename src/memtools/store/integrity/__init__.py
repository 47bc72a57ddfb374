"""Is a memory folder whole, and making it whole again: ``memtools check`` (``checker`` and the
per-part checks ``catalog_check``, ``lance_check``, ``vector_check``, ``keyframe_check``,
``navigation_check``, ``library_check``, ``frame_files``, ``time_check``; ``derived_check`` for
``--deep``), ``memtools repair`` (``repair``, ``repair_vectors``, ``table_swap``), what a killed
process left behind (``leftovers``), and the lance tables as a reader sees them (``guarded_index``).

May import: ``memtools.store.library.layer``, ``memtools.store.graph.cypher``, ``memtools.store.tables``,
``memtools.store.catalog`` and the store's base (``problems``: what a check reports); never the
write path or ``Memory`` (import-linter contract ``store``), so a check reads what is on disk, not
what a writer believes."""
