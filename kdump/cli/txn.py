"""``kdump txn``: producers, open/hanging transactions and last stable offsets, offline."""

from __future__ import annotations

import click

from kdump.cli.options import output_options, paths_argument
from kdump.cli.state_options import Duration, now_ms, now_option
from kdump.render.output import Output


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--transactional-id", metavar="ID", help="Only the producer of this transactional id.")
@click.option("--producer-id", type=int, metavar="PID", help="Only this producer id.")
@click.option("--hanging-after", type=Duration(), default="15m", show_default=True,
              help="An open transaction whose last write is older than this (and that the coordinator does not "
                   "list as ongoing on the partition) is hanging; as find-hanging's --max-transaction-timeout.")
@click.option("--open", "open_only", is_flag=True,
              help="Only the transactions still open (hanging or not), and the producers that hold them.")
@click.option("--strict", is_flag=True,
              help="Also exit 1 for anomalies: states a broker accepts as they are (an unreadable or disagreeing "
                   "producer snapshot, a batch its append would refuse, a disagreement with __transaction_state), "
                   "and for a __transaction_state partition that is incomplete (no .log, or a segment's indexes "
                   "without its .log).")
@now_option
@output_options
def txn(paths, transactional_id, producer_id, hanging_after, open_only, strict, now, json_flag, fmt, color, quiet):
    """Rebuild producer state from the logs, as a broker does at load.

    For every partition under PATHS (log dirs, partition dirs, several log dirs of one
    broker): each producer id with its epoch, last sequence and open transaction (first
    offset, size, age), the committed and aborted transactions, and the last stable
    offset. Transactional ids come from __transaction_state when its partitions are here.

    Disagreements are findings: .txnindex entries against the ABORT markers, producer
    .snapshot files against the replayed state, open transactions unknown to
    __transaction_state, and a log that ends in a torn or corrupt batch.

    Each finding has a class, as in kdump verify: damage (read_committed consumers see
    aborted records or miss committed ones, the log stops at damage), anomaly (odd, but
    a broker starting on the files accepts them as they are), info.

    A __transaction_state partition with no .log, or with a segment's indexes but not its
    .log, is named on stderr and in --json (an "incomplete" object), and the
    transactional ids read from it are marked possibly stale.

    \b
    Exit status: 0 no damage (anomalies and hanging transactions are reported, not an
    error), 1 damage found (anomalies and incomplete __transaction_state partitions too
    with --strict), 2 usage error, 3 could not complete.
    """
    from kdump.run.txn import run_txn

    return run_txn(paths, Output(json_flag, fmt, color, quiet), now_ms=now_ms(now), hanging_after_ms=hanging_after,
                   transactional_id=transactional_id, producer_id=producer_id, strict=strict,
                   open_only=open_only)
