"""Real storage servers for the remote tests, on 127.0.0.1, killed with the test process.

- S3: moto's standalone server (``moto[server]`` from PyPI), a real HTTP S3 endpoint; and
  S3Proxy (``org.gaul:s3proxy`` from Maven Central, ``s3proxy-pom.xml``: Jetty in a JVM, the
  objects stored as files), several times faster than moto, for the throughput bench.
- HDFS: Hadoop's MiniDFSCluster (one NameNode, one DataNode in a JVM) from the jars Maven
  copies into tests/remote/target/hadoop-jars (``tests/remote/pom.xml``; ``.ci/run`` fetches
  them, a test does it on first use), run by ``MiniDfs.java`` as a single-file program.

Every client the tests make points at these servers through the environment
(``s3_env``): the usual AWS variables, and ``AWS_EC2_METADATA_DISABLED`` so that no
credential lookup ever leaves the machine.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
JARS = HERE / "target" / "hadoop-jars"
S3PROXY_JARS = HERE / "target" / "s3proxy-jars"
FIXTURES = HERE.parents[1] / "fixtures"
# The log dirs every store gets a copy of: what no real file covers, and one a real broker wrote.
LOG_DIRS = {"generated": FIXTURES / "generated", "all-shapes": FIXTURES / "broker" / "all-shapes"}
START_TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except OSError:
        pass


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class S3Server:
    """moto's server; ``env`` holds what a client needs to reach it.

    ``checks_keys``: moto checks every request's signature and rights against its own IAM
    (INITIAL_NO_AUTH_ACTION_COUNT): ``start`` makes a user allowed everything (whose keys
    ``env`` gives) and one allowed only to list (``list_only``), with the first unchecked calls."""

    def __init__(self, log: Path, checks_keys: bool = False) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.checks_keys = checks_keys
        self.keys = self.list_only = ("testing", "testing")
        self.proc: subprocess.Popen | None = None

    def env(self, **extra: str) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.keys[0], "AWS_SECRET_ACCESS_KEY": self.keys[1],
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true", **extra}

    def start(self) -> S3Server:
        env = {**os.environ, **({"INITIAL_NO_AUTH_ACTION_COUNT": "3"} if self.checks_keys else {})}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_die_with_parent, env=env)
        atexit.register(self.stop)
        deadline = time.monotonic() + START_TIMEOUT
        while not _port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        if self.checks_keys:
            self.keys = self._user("admin", ["*"])         # the three unchecked calls
            self.list_only = self._user("lister", ["s3:ListBucket"])
        return self

    def _user(self, name: str, actions: list[str]) -> tuple[str, str]:
        import json

        iam = self.client("iam")
        iam.create_user(UserName=name)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
        iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
        return key["AccessKeyId"], key["SecretAccessKey"]

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)

    def client(self, service: str = "s3"):
        import boto3
        from botocore.config import Config

        # (no checksums unless required: S3Proxy refuses the headers newer botocore sends by default)
        return boto3.client(service, endpoint_url=self.endpoint, aws_access_key_id=self.keys[0],
                            aws_secret_access_key=self.keys[1], region_name="us-east-1",
                            config=Config(request_checksum_calculation="when_required",
                                          response_checksum_validation="when_required"))

    def upload(self, bucket: str, src: Path, prefix: str) -> str:
        """Every file under ``src`` as ``s3://bucket/prefix/<relative path>``; the URL."""
        s3 = self.client()
        try:
            s3.create_bucket(Bucket=bucket)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(src).as_posix()}", Body=path.read_bytes())
        return f"s3://{bucket}/{prefix}"


_S3PROXY_LOGGING = """<configuration>
  <appender name="err" class="ch.qos.logback.core.ConsoleAppender"><target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder></appender>
  <root level="WARN"><appender-ref ref="err"/></root>
</configuration>
"""


class S3Proxy(S3Server):
    """S3Proxy on 127.0.0.1 with jclouds' filesystem store under ``base``, the same keys as
    moto's (``testing``); a JVM, so several times moto's rate on ranged reads.

    ``provider="transient"``: jclouds' in-memory store instead, nothing on disk (lost when the
    server stops). It lists 100,000 keys in seconds where the filesystem store reads every
    object's metadata from disk for each page of 1,000 (bench/README.md)."""

    def __init__(self, base: Path, provider: str = "filesystem") -> None:
        super().__init__(base / "s3proxy.log")
        self.base = base
        self.provider = provider

    def start(self) -> S3Proxy:
        jars = _maven_jars(S3PROXY_JARS, "s3proxy-*.jar", "s3proxy-pom.xml")
        (self.base / "store").mkdir(parents=True, exist_ok=True)
        (self.base / "logback.xml").write_text(_S3PROXY_LOGGING)
        (self.base / "s3proxy.conf").write_text(
            f"s3proxy.endpoint={self.endpoint}\n"
            "s3proxy.authorization=aws-v2-or-v4\ns3proxy.identity=testing\ns3proxy.credential=testing\n"
            # pyarrow's AWS SDK sends headers S3Proxy does not implement (checksum modes)
            "s3proxy.ignore-unknown-headers=true\n"
            + (f"jclouds.provider=filesystem\njclouds.filesystem.basedir={self.base / 'store'}\n"
               if self.provider == "filesystem" else f"jclouds.provider={self.provider}\n"))
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Dlogback.configurationFile={self.base / 'logback.xml'}",
                 "-cp", f"{jars}/*", "org.gaul.s3proxy.Main", "--properties", str(self.base / "s3proxy.conf")],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        atexit.register(self.stop)
        deadline = time.monotonic() + START_TIMEOUT
        while not _port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"S3Proxy did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        return self


def _maven_jars(directory: Path, marker: str, pom: str) -> Path:
    """A directory of jars Maven copies from Central (``pom``), fetched on first use."""
    if not (directory.is_dir() and any(directory.glob(marker))):
        subprocess.run(["mvn", "-q", "-B", "-f", str(HERE / pom), "dependency:copy-dependencies"], check=True,
                       timeout=1800, stdin=subprocess.DEVNULL)
    return directory


def hadoop_jars() -> Path:
    """The MiniDFSCluster's jars, fetched by Maven on first use."""
    return _maven_jars(JARS, "hadoop-client-minicluster-*.jar", "pom.xml")


class MiniDfs:
    """A NameNode and a DataNode in one JVM; ``url`` is ``hdfs://127.0.0.1:<port>``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> MiniDfs:
        jars = hadoop_jars()
        log = open(self.base.parent / "minidfs.log", "wb")
        self.proc = subprocess.Popen(
            ["java", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
             "-cp", f"{jars}/*", str(HERE / "MiniDfs.java"), str(self.base)],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.PIPE, preexec_fn=_die_with_parent)
        atexit.register(self.stop)
        deadline = time.monotonic() + START_TIMEOUT
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith(b"READY "):
                self.url = f"hdfs://127.0.0.1:{int(line.split()[1])}"
                return self
        self.stop()
        raise RuntimeError(f"MiniDFSCluster did not start: {(self.base.parent / 'minidfs.log').read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()     # MiniDfs.java shuts the cluster down when stdin closes
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, OSError):
                _stop(self.proc)

    def upload(self, src: Path, prefix: str) -> str:
        """Every file under ``src`` as ``<url>/prefix/<relative path>``, written by a child process
        with a time limit (a client call that never returns must not hang the session)."""
        # Many files at once: each close waits about 0.5 s for the block to be complete, which
        # made uploading the fixtures one by one take 90 s.
        code = ("import sys, hdfs_native, pathlib, concurrent.futures as cf\n"
                "c = hdfs_native.Client(sys.argv[1]); src = pathlib.Path(sys.argv[2])\n"
                "def put(p):\n"
                "    w = c.create(f'/{sys.argv[3]}/{p.relative_to(src).as_posix()}')\n"
                "    w.write(p.read_bytes()); w.close()\n"
                "files = sorted(p for p in src.rglob('*') if p.is_file())\n"
                "for d in sorted({p.parent for p in files}):\n"
                "    c.mkdirs(str(pathlib.PurePosixPath('/', sys.argv[3], d.relative_to(src))), create_parent=True)\n"
                "with cf.ThreadPoolExecutor(32) as pool:\n"
                "    list(pool.map(put, files))\n")
        subprocess.run([sys.executable, "-c", code, self.url, str(src), prefix], check=True, timeout=300,
                       stdin=subprocess.DEVNULL)
        return f"{self.url}/{prefix}"


def in_env(env: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **env}


class SparkCluster:
    """A Spark standalone Master and ``workers`` Workers of ``cores`` cores each, from pyspark's
    own jars (spark-class), on 127.0.0.1. Each Worker has its own work dir: no disk is shared,
    what the executors read and write goes through the store. ``env`` reaches the executors
    (the AWS variables of the S3 server)."""

    def __init__(self, base: Path, env: dict[str, str], workers: int = 2, cores: int = 1) -> None:
        self.base, self.workers, self.cores = base, workers, cores
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        import pyspark

        self.home = os.path.dirname(pyspark.__file__)
        self.env = {**os.environ, **env, "SPARK_HOME": self.home, "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_DAEMON_MEMORY": "384m", "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                    "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "PYSPARK_PYTHON": sys.executable,
                    "SPARK_LOG_DIR": str(base)}

    def _spawn(self, name: str, *args: str) -> Path:
        log = self.base / f"{name}.log"
        with open(log, "wb") as out:
            self.procs.append(subprocess.Popen([os.path.join(self.home, "bin", "spark-class"), *args], env=self.env,
                                               stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True))
        return log

    def start(self) -> SparkCluster:
        atexit.register(self.stop)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                    str(self.port), "--webui-port", str(free_port()))
        self._wait(lambda: _port_open(self.port), "the master")
        for n in range(self.workers):
            work = self.base / f"worker-{n}"
            work.mkdir()
            log = self._spawn(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                              "--webui-port", str(free_port()), "--cores", str(self.cores), "--memory", "1g",
                              "--work-dir", str(work))
            self._wait(lambda: b"Successfully registered with master" in log.read_bytes(), f"worker {n}")
        return self

    def _wait(self, predicate, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not predicate():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                self.stop()
                raise RuntimeError(f"Spark standalone: {what} did not start (logs in {self.base})")
            time.sleep(0.5)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=20)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
        self.procs.clear()
