"""The write path: one atomic step per batch across the graph, the lance tables and the catalog
(``batch``), the write journal that a writer killed at any instant is finished or undone from
(``recovery``), keyframe folders swapped in whole (``frame_swap``), and the recording times a write carries
(``recording_times``).

May import: everything below it in the store (``integrity``, ``library``, ``graph``, ``tables``,
``catalog``, ``base``); only ``memtools.store.memory`` and the store's top modules import it (import-linter
contract ``store``)."""
