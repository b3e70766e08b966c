"""What a server sparkscope starts downloads from Maven Central (Spark's Kafka connector, `--kafka`): through Spark's
own Ivy, with settings and a cache of sparkscope's own (packages.py)."""
