"""Session-wide storage servers for tests/remote: moto's S3 server and a MiniDFSCluster, with
the same log dirs uploaded to each (fixtures/generated, and fixtures/broker/all-shapes written
by a real broker). Each server starts once, on first use, and stops at the end of the session."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import LOG_DIRS, MiniDfs, S3Proxy, S3Server  # noqa: E402

BUCKET = "kdump-logs"


def _ci() -> bool:
    return os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A running moto S3 server; the process's environment points every client at it."""
    pytest.importorskip("moto", reason="moto[server] is in the test extra")
    pytest.importorskip("pyarrow")
    server = S3Server(tmp_path_factory.mktemp("moto") / "moto.log").start()
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    yield server
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture(scope="session")
def s3_checking_keys(tmp_path_factory):
    """A second moto server, one that checks keys and rights, with a log dir uploaded
    (``url``); the process's environment is left pointing at ``s3``."""
    pytest.importorskip("moto", reason="moto[server] is in the test extra")
    server = S3Server(tmp_path_factory.mktemp("moto-iam") / "moto.log", checks_keys=True).start()
    server.url = server.upload(BUCKET, LOG_DIRS["generated"], "generated")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_dirs(s3) -> dict[str, str]:
    """name -> the s3:// URL of the same log dir as LOG_DIRS[name]."""
    return {name: s3.upload(BUCKET, src, name) for name, src in LOG_DIRS.items()}


@pytest.fixture(scope="session")
def s3proxy_dirs(tmp_path_factory):
    """S3Proxy (the bench's faster server) with the log dirs uploaded: (server, name -> URL).
    The process's environment is left pointing at ``s3``: a test gives ``server.env()`` to
    the kdump it runs."""
    pytest.importorskip("pyarrow")
    if shutil.which("java") is None or (shutil.which("mvn") is None and not _ci()):
        pytest.skip("S3Proxy needs Java and Maven")
    server = S3Proxy(tmp_path_factory.mktemp("s3proxy")).start()
    yield server, {name: server.upload(BUCKET, src, name) for name, src in LOG_DIRS.items()}
    server.stop()


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory):
    pytest.importorskip("hdfs_native", reason="hdfs-native is in the test extra")
    if shutil.which("java") is None or (shutil.which("mvn") is None and not _ci()):
        pytest.skip("the MiniDFSCluster needs Java and Maven")
    cluster = MiniDfs(tmp_path_factory.mktemp("minidfs") / "base").start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def hdfs_dirs(hdfs) -> dict[str, str]:
    return {name: hdfs.upload(src, name) for name, src in LOG_DIRS.items()}
