"""ipywidgets views (core widgets only, so they run on Databricks too); imported only when asked for."""
