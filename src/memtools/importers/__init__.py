"""Importers: build a memory from annotations that already exist instead of running a vision model.

    memtools.importers.captions     SRT / WebVTT / dense-caption JSON -> micro-events
    memtools.memdreamer             MEMDREAMER release memories -> the full hierarchy (importer and exporter)

Each module is imported on use; this package imports nothing at import time.
"""
