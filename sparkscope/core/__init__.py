"""The one core both front ends stand on: the executor that runs Python and colon commands, its worker threads,
the commands (commands/), what is printed (rendering/), and code written for pyspark or Databricks (compat/)."""
