"""The lance side of a memory: the searchable ``nodes`` table and the rows held in memory for
vector search (``vectors``, ``resident*``), the ``entities`` and ``keyframes`` tables, the row
payloads and canonical entities written into them, filters as lance SQL, where the tables live
(``location``: the memory folder or object storage), and each video's voice centroids
(``voices``) and face clusters (``faces``), small JSON files (``per_video``).

May import: ``memtools.store.base``, the store's small shared modules, and ``memtools.store.catalog``
(a keyframe write reads the manifest). Never the graph engines, the write path or the integrity
code (import-linter contract ``store``)."""
