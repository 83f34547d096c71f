"""kdump: a forensic toolkit for Apache Kafka log directories."""

__version__ = "0.1.0"
