"""``kdump export``'s run in this process (``--engine local``): the records written over -j
workers, and the run's account on stderr (or as one JSON object with --json). The Spark
engine's run is ``kdump.spark.export.run_spark_export``."""

from __future__ import annotations

from kdump.errors import ExitStatus, KdumpError, UsageError
from kdump.render.export import report_export


def run_export(paths: list[str], out: str, *, jobs: int, decode: bool, schemas: tuple, json_flag: bool,
               quiet: bool, options: dict, remote=None) -> int:
    """``schemas``: (--schemas, --schema-registry, --schema-cache); ``options``: the engines'
    shared keyword arguments (format, partitioning, encoding, split size, overwrite, limits);
    ``remote``: --remote-storage's (``kdump.run.tiered.Remote``): tiered partitions whole."""
    from kdump.export.local import export_local
    from kdump.render.output import Output
    from kdump.render.progress import Progress
    from kdump.state.txn_status import of_partition
    from kdump.storage.levels import resolve
    from kdump.storage.logdir import BATCH_KINDS

    chosen = None
    if remote is not None:
        from kdump.run.tiered import whole_log

        chosen = whole_log(paths, remote, Output(False, None, quiet=quiet))
        files = [f.path for f in chosen[0]]
    else:
        try:
            files = [f.path for f in resolve(paths, kinds=BATCH_KINDS, errors=[])]
        except KdumpError:
            files = []          # export_local reports it in its own words
    with Progress.for_paths(Output(json_flag, None, quiet=quiet), files, "export"):
        result = export_local(paths, out, jobs=jobs, decode=_decoder(paths, decode, options["fmt"], *schemas, quiet),
                              chosen=chosen, guard=(remote.storage,) if remote is not None else (), txn=of_partition,
                              **options)
    report_export(result, out, options["fmt"], "local", json_flag, quiet)
    return int(result.status if result.status else ExitStatus.OK)


def _decoder(paths, decode: bool, fmt: str, schemas_path, registry, cache, quiet: bool):
    if not decode:
        return None
    if fmt != "parquet":
        raise UsageError("--decode writes Parquet columns; for NDJSON use kdump dump --json --value-decoder auto")
    from kdump.render.output import Output
    from kdump.run.schema_store import load_store
    from kdump.schemas.arrow import TopicColumns
    from kdump.schemas.decoder import SchemaDecoder

    store = load_store(paths, schemas_path, registry, cache, Output(False, None, quiet=quiet), need=False)
    from kdump.schemas.store import SchemaStore

    return TopicColumns(SchemaDecoder("auto", store or SchemaStore()))
