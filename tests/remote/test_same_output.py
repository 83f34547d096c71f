"""The same log dirs read from local disk, from S3 (moto's server; S3Proxy's, the bench's, for
a few commands) and from HDFS (a MiniDFSCluster) give the same bytes on stdout and stderr, and
the same exit status, for every reading command: only the PATH prefix differs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from servers import LOG_DIRS

from support.run import run_kdump

NOW = "--now=2024-01-01T00:00:00Z"
COMMANDS = [
    ("dump", "--json", "-j", "1"),
    ("dump", "--records", "--json", "-j", "2"),
    ("dump", "--data", "--start-offset", "3", "-j", "1"),
    ("verify", "--json", "-j", "1"),
    ("verify", "--deep", "-j", "2"),
    ("info", "--json", "-j", "1"),
    ("index", "--verify", "--json", "-j", "1"),
    ("timeindex", "--verify", "--json", "-j", "1"),
    ("recover", "--json", "-j", "1"),
    ("txn", "--json", NOW),
    ("groups", "--json", NOW),
]
METADATA = "__cluster_metadata-0"


def _same(local: str, url: str, args: tuple[str, ...], sub: str = "") -> None:
    want = run_kdump(*args, local + sub)
    got = run_kdump(*args, url + sub)
    assert got.code == want.code, got.err[-2000:]
    assert got.out.replace(url, local) == want.out
    assert got.err.replace(url, local) == want.err
    assert want.out or want.err


def _commands(dirs):
    for name in LOG_DIRS:
        for args in COMMANDS:
            yield name, args


@pytest.mark.slow
@pytest.mark.parametrize("name,args", list(_commands(LOG_DIRS)), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_s3_gives_the_local_bytes(s3_dirs, name, args):
    _same(str(LOG_DIRS[name]), s3_dirs[name], args)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LOG_DIRS))
def test_s3_metadata_and_single_files(s3_dirs, name):
    local, url = str(LOG_DIRS[name]), s3_dirs[name]
    _same(local, url, ("metadata", "--json"), "/" + METADATA)
    _same(local, url, ("dump", "--records", "--json"), f"/{METADATA}/00000000000000000000.log")
    _same(local, url, ("verify", "--json"), f"/{METADATA}/00000000000000000000.index")


@pytest.mark.slow
@pytest.mark.parametrize("name,args", list(_commands(LOG_DIRS)), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_hdfs_gives_the_local_bytes(hdfs_dirs, name, args):
    _same(str(LOG_DIRS[name]), hdfs_dirs[name], args)


@pytest.mark.slow
def test_s3a_and_file_urls(s3_dirs):
    local, url = str(LOG_DIRS["generated"]), s3_dirs["generated"]
    want = run_kdump("verify", "--json", "-j", "1", local)
    got = run_kdump("verify", "--json", "-j", "1", url.replace("s3://", "s3a://"))
    assert got.code == want.code
    assert got.out.replace(url.replace("s3://", "s3a://"), local) == want.out
    got = run_kdump("verify", "--json", "-j", "1", "file://" + local)
    assert (got.code, got.out) == (want.code, want.out)


@pytest.mark.slow
def test_s3proxy_gives_the_local_bytes(s3proxy_dirs):
    """The bench's server (another S3 implementation: what kdump reads must not depend on it)."""
    server, urls = s3proxy_dirs
    env = {**os.environ, **server.env()}
    for name in LOG_DIRS:
        for args in (("verify", "--json", "-j", "2"), ("dump", "--json", "-j", "1"), ("dump", "--records", "--json")):
            want, got = (subprocess.run([sys.executable, "-m", "kdump", *args, path], env=env, capture_output=True,
                                        text=True, timeout=300, stdin=subprocess.DEVNULL)
                         for path in (str(LOG_DIRS[name]), urls[name]))
            assert got.returncode == want.returncode, got.stderr[-2000:]
            assert got.stdout.replace(urls[name], str(LOG_DIRS[name])) == want.stdout
            assert got.stderr.replace(urls[name], str(LOG_DIRS[name])) == want.stderr


def test_io_limit_counts_a_remote_read_as_the_local_one(s3_dirs, monkeypatch):
    """--io-limit holds for s3:// too: the bytes counted against it are the local run's."""
    from kdump.storage import gentle

    charged: list[int] = []
    monkeypatch.setattr(gentle.Throttle, "charge", lambda self, n: charged.append(n))
    local, url = str(LOG_DIRS["generated"]), s3_dirs["generated"]
    want = run_kdump("dump", "--json", "-j", "1", "--io-limit", "1000", local)
    local_bytes, charged[:] = sum(charged), []
    got = run_kdump("dump", "--json", "-j", "1", "--io-limit", "1000", url)
    assert got.code == want.code and got.out.replace(url, local) == want.out
    assert sum(charged) == local_bytes > 0
