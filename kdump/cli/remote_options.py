"""``--remote-storage``, ``--remote-layout``, ``--remote-metadata``: tiered storage (KIP-405)
for ``dump``, ``verify``, ``info`` and ``export``."""

from __future__ import annotations

import click

from kdump.storage.remote_store import LAYOUTS


def remote_options(f):
    f = click.option("--remote-keyring", type=click.Path(exists=True, dir_okay=False, path_type=str), metavar="FILE",
                     help="aiven: the key ring of encrypted segments, lines <key id>=<RSA private key PEM file> "
                          "(or the plugin's encryption.key.pairs.<id>.private.key.file settings).")(f)
    f = click.option("--remote-metadata", type=click.Path(exists=True, path_type=str), metavar="PATH",
                     help="Where the __remote_log_metadata partitions are (default: the PATHS' own).")(f)
    f = click.option("--remote-layout", type=click.Choice(LAYOUTS), default="kafka-local", show_default=True,
                     help="How the remote store lays out its objects (kafka-local: Kafka's LocalTieredStorage; "
                          "aiven: Aiven's tiered-storage-for-apache-kafka, --remote-storage being the bucket "
                          "URL and key.prefix).")(f)
    f = click.option("--remote-storage", type=click.Path(path_type=str), metavar="PATH_OR_URL",
                     help="A tiered topic's remote store, a directory or an s3:// or hdfs:// URL (for "
                          "kafka-local the broker's rsm.config.dir or its kafka-tiered-storage folder, or that "
                          "tree copied under the URL): the partitions' whole log is their live remote "
                          "segments, as __remote_log_metadata says, plus the local ones. Read only.")(f)
    return f


def remote_of(remote_storage, remote_layout, remote_metadata, remote_keyring=None):
    """The run's Remote, or None without --remote-storage."""
    if remote_storage is None:
        if remote_metadata is not None or remote_keyring is not None:
            raise click.UsageError(f"--remote-{'metadata' if remote_metadata else 'keyring'} needs --remote-storage")
        return None
    from kdump.run.tiered import Remote

    return Remote(remote_storage, remote_layout, remote_metadata, remote_keyring)
