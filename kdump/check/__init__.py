"""Kafka's rules, applied to what is on disk."""
