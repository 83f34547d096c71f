"""``kdump export --engine spark`` on a standalone cluster (a Master and two Workers, no shared
disk) reading a log dir from S3 and writing Parquet to S3; and from HDFS to HDFS. The rows
are the local engine's rows of the same log dir (only the ``file`` column names the store)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from servers import LOG_DIRS, SparkCluster

from kdump.export.local import export_local
from kdump.state.txn_status import of_partition

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SORT = ["topic", "partition", "position", "offset", "error"]


def _rows(table, prefix: str, local: str):
    import pyarrow as pa
    import pyarrow.compute as pc

    files = pc.replace_substring(table["file"], prefix, local)
    table = table.set_column(table.schema.get_field_index("file"), "file", files)
    table = table.cast(pa.schema([f.with_type(pa.string()) if f.name == "topic" else f for f in table.schema]))
    return table.select(sorted(table.schema.names)).sort_by([(c, "ascending") for c in SORT]).to_pylist()


def _read(url: str, filesystem):
    import pyarrow.dataset as ds

    return ds.dataset(url, filesystem=filesystem, format="parquet", partitioning="hive",
                      ignore_prefixes=[".", "_"]).to_table()


@pytest.fixture(scope="module")
def cluster(s3, tmp_path_factory):
    pytest.importorskip("pyspark")
    c = SparkCluster(tmp_path_factory.mktemp("spark"), s3.env(), workers=2, cores=1).start()
    yield c
    c.stop()


def _export(cluster, src: str, out: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdump", "export", src, "--out", out, "--engine", "spark", "--master",
                           cluster.url, "--conf", "spark.executor.memory=512m"],
                          env=cluster.env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_standalone_cluster_reads_and_writes_s3(s3, s3_dirs, cluster, tmp_path):
    import pyarrow.fs as pafs

    local = str(LOG_DIRS["generated"])
    want = export_local([local], str(tmp_path / "local"), fmt="parquet", txn=of_partition)
    done = _export(cluster, s3_dirs["generated"], "s3://kdump-logs/exports/generated")
    assert done.returncode == 1, done.stderr[-3000:]        # the torn tail is an error row, as locally
    store = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http", region="us-east-1")
    names = [i.base_name for i in store.get_file_info(pafs.FileSelector("kdump-logs/exports/generated"))]
    assert "_SUCCESS" in names and ".kdump-incomplete" not in names
    got = _read("kdump-logs/exports/generated", store)
    assert got.num_rows == want.rows
    expected = _read(str(tmp_path / "local"), pafs.LocalFileSystem())
    assert _rows(got, s3_dirs["generated"], local) == _rows(expected, local, local)


def test_standalone_cluster_reads_and_writes_hdfs(hdfs, hdfs_dirs, cluster, tmp_path):
    import pyarrow.fs as pafs

    local = str(LOG_DIRS["generated"])
    export_local([local], str(tmp_path / "local"), fmt="parquet", txn=of_partition)
    done = _export(cluster, hdfs_dirs["generated"], f"{hdfs.url}/exports/generated")
    assert done.returncode == 1, done.stderr[-3000:]
    import hdfs_native

    client = hdfs_native.Client(hdfs.url)
    names = {s.path.rpartition("/")[2] for s in client.list_status("/exports/generated")}
    assert "_SUCCESS" in names
    copy = tmp_path / "from-hdfs"
    for status in client.list_status("/exports/generated", recursive=True):
        if not status.isdir:
            target = copy / status.path[len("/exports/generated/"):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(client.read(status.path).read())
    got = _read(str(copy), pafs.LocalFileSystem())
    expected = _read(str(tmp_path / "local"), pafs.LocalFileSystem())
    assert _rows(got, hdfs_dirs["generated"], local) == _rows(expected, local, local)


def test_kafka_log_source_reads_s3a_on_the_cluster(s3_dirs, cluster, tmp_path):
    """PySpark users name the bucket as Hadoop does: ``s3a://``; the rows are the local ones."""
    local = str(LOG_DIRS["generated"])
    url = s3_dirs["generated"].replace("s3://", "s3a://")
    script = ("import sys, json\n"
              "from kdump.spark import get_session\n"
              "spark = get_session(sys.argv[1])\n"
              "df = spark.read.format('kafka-log').load(sys.argv[2])\n"
              "rows = df.where('error IS NULL').select('topic', 'partition', 'offset').collect()\n"
              "print(json.dumps(sorted([r.topic, r.partition, r.offset] for r in rows)))\n"
              "spark.stop()\n")
    done = subprocess.run([sys.executable, "-c", script, cluster.url, url], env=cluster.env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    import pyarrow.dataset as ds

    export_local([local], str(tmp_path / "local"), fmt="parquet", txn=of_partition)
    table = ds.dataset(str(tmp_path / "local"), format="parquet", partitioning="hive").to_table().to_pylist()
    want = sorted([str(r["topic"]), r["partition"], r["offset"]] for r in table if r["error"] is None)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == want


def test_a_store_refusing_the_tasks_is_one_line(s3, s3_dirs, tmp_path):
    """Tasks that meet a store they cannot use (no keys: S3 lists, refuses reads) end the job
    with the local run's one line, exit 3: not a Python traceback from a worker, not damage."""
    import os

    env = {**os.environ, **s3.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="",
                                  AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent")}
    url = s3_dirs["generated"] + "/headers-0"
    for args in (("export", url, "--out", str(tmp_path / "out")), ("verify", url)):
        done = subprocess.run([sys.executable, "-m", "kdump", *args, "--engine", "spark", "--master", "local[1]"],
                              env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        errors = [line for line in done.stderr.splitlines() if line.startswith("kdump:")]
        assert done.returncode == 3, done.stderr[-3000:]
        assert errors == [f"kdump: error: {url}/00000000000000000000.log: access denied by S3 endpoint "
                          f"{s3.endpoint} (wrong or missing credentials, or no right to read it)"], done.stderr[-3000:]
    assert not (tmp_path / "out").exists()
