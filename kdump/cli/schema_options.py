"""--schemas / --schema-registry / --schema-cache, and the Schema Registry decoders they feed
(--key-decoder/--value-decoder avro, protobuf, jsonschema, connect, auto): dump, export,
info and verify --schemas share them."""

from __future__ import annotations

from collections.abc import Callable

import click


def decode_limit_option(f: Callable) -> Callable:
    """--decode-limit: how many bytes of JSON one decoded key or value may grow to."""
    from kdump.cli.options import ByteSize
    from kdump.schemas import budget

    def apply(ctx: click.Context, param: click.Parameter, value: int) -> int:
        budget.Limits.output_bytes = value
        return value

    return click.option("--decode-limit", type=ByteSize(), default=budget.DEFAULT_OUTPUT_BYTES,
                        show_default="64MiB", expose_value=False, callback=apply,
                        help="The most bytes of JSON one key or value may decode to under its schema (an Avro "
                             "block of a million nulls is 5 MB from 4 bytes); past it the record is one located "
                             "error (verify: schema_budget) and the run goes on.")(f)


def schema_options(f: Callable) -> Callable:
    f = decode_limit_option(f)
    f = click.option("--schema-cache", metavar="FILE",
                     help="Where --schema-registry keeps what it read [default: "
                          "~/.cache/kdump/schema-registry/<url>.ndjson]; --schemas FILE reads it offline.")(f)
    f = click.option("--schema-registry", metavar="URL",
                     help="Read every schema from a live Schema Registry (Confluent's REST API) once, and cache "
                          "it; an id that no subject lists is asked for on demand (GET /schemas/ids/{id}).")(f)
    f = click.option("--schemas", "schemas_path", metavar="PATH",
                     help="The schema store: a _schemas partition dir, a folder of .avsc/.proto/.json files, or a "
                          "--schema-registry cache [default: the _schemas-0 of the log dir being read].")(f)
    return f


def decoder_choice(basic_names) -> click.Choice:
    # (imported here: verify, which has no decoder option, starts without the decoders' modules)
    from kdump.schemas.decoder import SCHEMA_DECODERS

    return click.Choice((*basic_names, *SCHEMA_DECODERS))
