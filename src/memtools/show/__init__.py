"""See a memory: a timeline picture per video and self-contained HTML pages to browse it.

``export_show(memory, out)`` writes everything to a folder (``memtools show``);
``memtools.show.web`` serves the same pages live (``memtools serve --http`` at ``/``);
``trace_page(trajectory, tools)`` draws an answer's ORA rounds (``memtools ask --trace``).
Everything is read through ``MemoryTools``; nothing here writes to the memory.
"""

from memtools.show.collect import outline, video_view
from memtools.show.export import ShowReport, export_show
from memtools.show.page import library_pages, video_files
from memtools.show.timeline import draw_timeline

__all__ = ["ShowReport", "draw_timeline", "export_show", "library_pages", "outline", "video_files", "video_view"]
