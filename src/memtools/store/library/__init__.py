"""The library layer: what carries over between a library's videos. Canonical entities linked
across videos into library entities with stable ids (``link_rules``: the evidence and the
refusals), people (``identity``: voice and face clusters matched across videos, ``people``: their table),
activity occurrences, kept in ``library.sqlite`` and derived again inside every
journaled write (``layer``), and the reads the tools make of it (``reads``).

May import: ``memtools.store.graph.cypher``, ``memtools.store.tables``, ``memtools.store.catalog`` and the
store's base (``problems`` included: a stale layer is reported by ``memtools check``); the
integrity code and the write path import it, never the other way (import-linter contract
``store``)."""
