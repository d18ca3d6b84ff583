"""puffin_explorer: look inside Apache Iceberg Puffin files."""
__version__ = "0.1.0"
