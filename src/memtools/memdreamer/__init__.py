"""MEMDREAMER release memories, both ways: ``import_memdreamer`` reads a release into a memtools
memory, ``export_memdreamer`` writes a memtools graph in the release layout (fixtures, hand-offs).

    importer.py   find, read and import release folders (the mapping decisions are in its docstring)
    parse.py      one video folder -> a ``VideoGraph`` plus what was repaired or dropped
    subgraph.py   one episode's ``step5_subgraph.json`` -> entities, micro-events, on-screen text, edges
    files.py      where the release keeps each file, and reading them
    values.py     their values (times, labels, ids) in our vocabulary
    report.py     what an import did, per video
    export.py     a memtools graph -> the release layout
"""

from memtools.memdreamer.export import export_memdreamer
from memtools.memdreamer.importer import (
    FrameFile,
    MemdreamerImport,
    MemdreamerVideo,
    find_videos,
    import_memdreamer,
    read_memdreamer,
)
from memtools.memdreamer.report import ImportReport, VideoReport

__all__ = ["FrameFile", "ImportReport", "MemdreamerImport", "MemdreamerVideo", "VideoReport", "export_memdreamer",
           "find_videos", "import_memdreamer", "read_memdreamer"]
