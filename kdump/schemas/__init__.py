"""Schema Registry payloads decoded offline: Avro, Protobuf, JSON Schema and Connect's JSON envelope.

The schemas come from where the producers' registry kept them: the log dir's own ``_schemas``
topic (``store`` replays it as Schema Registry does), a folder of schema files, or a live
registry read once through its REST API and cached (``sources``, ``registry``). ``frame``
reads the wire frame (magic 0, a 4-byte schema id, Protobuf's message indexes); ``avro``,
``protobuf``, ``json_schema`` and ``connect`` decode a payload under its schema, and
``avro_text`` is dump's fast path (the writer schema compiled into a reader of the datum's
JSON text, with a C twin in ``kdump/_speedups/avrojson.c``); ``decoder`` is what a command
hands to ``decoders.views.PayloadView``. ``compat`` holds Schema Registry's Avro
compatibility rules, ``check`` what ``verify --schemas`` reports, ``usage`` what ``info
--schemas`` lists, ``arrow`` the column of ``export --decode`` and the Spark source.

The libraries (fastavro, protobuf and grpcio-tools, jsonschema) are the ``schemas`` extra,
imported only when a schema of that type is used.
"""
