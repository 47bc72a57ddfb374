"""Removing what a purge removes from each part of a memory folder so that no byte of it is left: the graph
engine's file rewritten (``graph_copy``), the lance tables written again without old versions
(``lance_rewrite``), the SQLite side files vacuumed (``sqlite_files``) and the files that name a video
(``files``). ``memtools.changes.purge`` runs them in order, journaled in the change log."""
