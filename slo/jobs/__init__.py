"""PySpark batch jobs."""
