"""Export and import: a memory as one portable, documented, versioned archive (docs/export.md).

    from memtools.archive import export_memory, import_export
    export_memory("my-memory", "my-memory.zip")             # memtools export --memory my-memory my-memory.zip
    import_export("my-memory.zip", "copy")                  # memtools import-export my-memory.zip --memory copy

    format       the archive's files, their row models, the version policy
    texts        the texts a write embeds, and their vectors as a memory holds them
    writer       the zip written beside its target and renamed into place
    reader       the zip read as untrusted input, checked whole before anything is written
    export       export_memory
    import_      import_export

The MEMDREAMER release layout has its own exporter (``memtools.memdreamer``); this is memtools' own.
"""

from memtools.archive.export import ExportReport, export_memory
from memtools.archive.format import FORMAT, FORMAT_VERSION
from memtools.archive.import_ import ImportReport, import_export

__all__ = ["FORMAT", "FORMAT_VERSION", "ExportReport", "ImportReport", "export_memory", "import_export"]
