"""The fault tests' fixtures (``template``: a two-video memory built once; ``mem``: a private copy of it)."""

from fault_helpers import mem, template  # pytest finds fixtures by name in a conftest (re-exported below)

__all__ = ["mem", "template"]
