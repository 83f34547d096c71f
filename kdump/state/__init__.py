"""Cluster state rebuilt offline from a broker's files: producers and transactions
(``txn``), consumer groups (``groups``) and the KRaft metadata image (``metadata``).

Everything here reads through the decoding core (``kdump.format``) and the internal-topic
decoders (``kdump.decoders``); it only ever opens the partitions a question needs.
"""
