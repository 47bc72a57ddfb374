"""The version of memtools (its own module, so a package can name it without importing ``memtools``' front page)."""

__version__ = "0.1.0"
