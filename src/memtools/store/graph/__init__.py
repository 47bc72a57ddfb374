"""The graph engine side of a memory: the one module that runs Cypher (``cypher``), the node and
edge tables and how models map onto rows (``schema``), the navigation rows derived from a video's
graph (``rows``), whole-video reads for check and repair (``audit``), and which engine a process
loads (``engines``: kuzu or ladybug).

May import: ``memtools.store.base`` and the store's small shared modules (``faults``,
``resources``, ``outline``), ``memtools.schema``. Never the lance tables, the catalog, the write
path or the integrity code (import-linter contract ``store`` in pyproject.toml)."""
