"""kafka-dump-log.sh's own options on ``kdump dump``, with Kafka's meaning.

A script that calls ``kafka-dump-log.sh --files a.log,b.index --print-data-log ...``
works by changing the command name: ``--files`` takes the comma-separated list (and,
like Kafka, picks no decoder from the topic name), the decoder classes are Kafka's
built-in String/Integer/Long decoders, and the index options act on ``.index`` and
``.timeindex`` files.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from kdump.check.indexes.dls_view import DLS_MAX_MESSAGE_SIZE
from kdump.decoders import kafka_lines, plain


def dls_options(f: Callable) -> Callable:
    f = click.option("--max-message-size", type=click.IntRange(min=0), default=DLS_MAX_MESSAGE_SIZE,
                     show_default=True, metavar="BYTES",
                     help="Text view of an .index: read at most BYTES at each entry's position to find its "
                          "batch (kafka-dump-log.sh's option).")(f)
    f = click.option("--verify-index-only", is_flag=True,
                     help="Text view of .index/.timeindex files: check the entries against the segment, "
                          "list none (mismatches go to stderr, as kafka-dump-log.sh reports them).")(f)
    f = click.option("--index-sanity-check", is_flag=True,
                     help="Text view of .index/.timeindex files: only run the broker's startup sanity check.")(f)
    f = click.option("--value-decoder-class", metavar="CLASS",
                     help="Kafka's decoder class for values: org.apache.kafka.tools.api.StringDecoder, "
                          "IntegerDecoder or LongDecoder (= --value-decoder utf8/int/long); kafka.serializer's "
                          "with --kafka-version 3.9 or older.")(f)
    f = click.option("--key-decoder-class", metavar="CLASS",
                     help="Kafka's decoder class for keys (see --value-decoder-class).")(f)
    f = click.option("--files", "files", multiple=True, metavar="FILE,...", type=click.Path(path_type=str),
                     help="Files to dump, comma-separated, as kafka-dump-log.sh takes them (may be repeated; "
                          "PATHS work too). Like Kafka, picks no decoder from the topic name.")(f)
    return f


def decoder_for_class(name: str | None, option: str) -> str | None:
    """kdump's decoder for one of Kafka's decoder class names (simple names accepted)."""
    if name is None:
        return None
    for full, ours in plain.KAFKA_DECODER_CLASSES.items():
        if name in (full, full.rsplit(".", 1)[1]):
            return ours
    if name in plain.KAFKA_IDENTITY_DECODERS or name == "DefaultDecoder":
        raise click.BadParameter(f"{name!r}: kafka-dump-log.sh prints a Java byte array's identity with it "
                                 f"([B@6d06d69c, another every run), nothing to reproduce; --key-decoder/"
                                 f"--value-decoder hex or base64 show the bytes", param_hint=option)
    known = ", ".join(plain.KAFKA_DECODER_CLASSES)
    raise click.BadParameter(f"{name!r}: kdump runs no Java; it knows Kafka's built-in decoders {known}",
                             param_hint=option)


def kafka_line(version: str | None, view: str, options: dict) -> kafka_lines.KafkaLine:
    """The Kafka line --kafka-version names (default the newest); a usage error where the view
    is not the text one, or the line's kafka-dump-log.sh lacks one of ``options``."""
    if version is not None and view != "text":
        raise click.UsageError("--kafka-version is for the text view (kafka-dump-log.sh's lines); --json and "
                               "tables are kdump's own schema, the same for every Kafka line")
    kafka = kafka_lines.KafkaLine(version or kafka_lines.NEWEST)
    refused = kafka.refused(options)
    if refused:
        raise click.UsageError(refused)
    return kafka


def split_files(values: tuple[str, ...]) -> list[str]:
    return [p for v in values for p in v.split(",") if p]
