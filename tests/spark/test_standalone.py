"""A real Spark standalone master and worker on 127.0.0.1, started from the pyspark install,
running ``kdump verify --engine spark`` and ``kdump export --engine spark`` as a user would
(separate driver processes), then stopped: always, in bounded time."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from sparkkit import GENERATED, run_cli
from test_export_spark import read_parquet

from kdump.export.local import export_local
from kdump.state.txn_status import of_partition

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START_TIMEOUT = 90
RUN_TIMEOUT = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, timeout: float, what: str, procs) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(f"{what}: a cluster process exited early ({p.args[1]})")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group this test created for ``proc`` (the worker's executors are in
    it too), then SIGKILL whatever is left after 20 s."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)      # stragglers in the group (executors)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.fixture
def cluster(spark_available, tmp_path):
    """(master URL, env) of a running standalone cluster with one 2-core worker."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    spark_class = os.path.join(home, "bin", "spark-class")
    master_port, master_ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="512m",
               JAVA_TOOL_OPTIONS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
               PYSPARK_PYTHON=sys.executable, SPARK_LOG_DIR=str(tmp_path), SPARK_WORKER_DIR=str(tmp_path / "work"))
    url = f"spark://127.0.0.1:{master_port}"
    procs: list[subprocess.Popen] = []
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("master", "worker")}
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port),
             "--webui-port", str(master_ui)],
            env=env, stdout=logs["master"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
        _wait_for(lambda: _port_open(master_port), START_TIMEOUT, "the master", procs)
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--webui-port", str(worker_ui), "--cores", "2", "--memory", "1536m",
             "--work-dir", str(tmp_path / "work")],
            env=env, stdout=logs["worker"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
        worker_log = tmp_path / "worker.log"
        _wait_for(lambda: b"Successfully registered with master" in worker_log.read_bytes(), START_TIMEOUT,
                  "the worker to register", procs)
        yield url, env
    finally:
        for p in reversed(procs):
            _stop(p)
        for f in logs.values():
            f.close()


def _kdump(env, *args):
    return subprocess.run([sys.executable, "-m", "kdump", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)


def test_verify_and_export_on_a_standalone_cluster(cluster, tmp_path):
    url, env = cluster
    env = {k: v for k, v in env.items() if k not in ("SPARK_HOME", "SPARK_LOG_DIR", "SPARK_WORKER_DIR")}

    local_code, local_out, _ = run_cli("verify", "--json", GENERATED)
    done = _kdump(env, "verify", "--json", "--engine", "spark", "--master", url, GENERATED)
    assert done.returncode == local_code == 1, done.stderr[-3000:]
    assert done.stdout == local_out

    out = tmp_path / "export"
    done = _kdump(env, "export", GENERATED, "--out", out, "--engine", "spark", "--master", url, "--json")
    assert done.returncode == 1, done.stderr[-3000:]          # the torn-tail fixture is damage
    export_local([str(GENERATED)], str(tmp_path / "local"), txn=of_partition)
    a, b = read_parquet(str(tmp_path / "local")), read_parquet(str(out))
    assert a.num_rows == b.num_rows > 200
    assert a.to_pylist() == b.to_pylist()
