"""The MEMDREAMER importer moved to ``memtools.memdreamer`` (beside its exporter); this name stays importable."""

from memtools.memdreamer import (
    FrameFile,
    ImportReport,
    MemdreamerImport,
    MemdreamerVideo,
    VideoReport,
    export_memdreamer,
    find_videos,
    import_memdreamer,
    read_memdreamer,
)

__all__ = ["FrameFile", "ImportReport", "MemdreamerImport", "MemdreamerVideo", "VideoReport", "export_memdreamer",
           "find_videos", "import_memdreamer", "read_memdreamer"]
