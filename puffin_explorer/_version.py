"""The package's version, below everything that reports it."""

__version__ = "0.1.0"
