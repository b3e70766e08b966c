"""Running Spark on this machine: the embedded Spark Connect server, its standalone cluster, the processes and
ports they use. The SDK (sparkscope.client) starts and stops no process; this package does, and uses the SDK."""
