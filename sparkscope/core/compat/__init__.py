"""Code written for pyspark or Databricks, run as written: getOrCreate, waits, display, dbutils."""
