"""A real Kafka broker for the tests: one KRaft process (broker + controller) on 127.0.0.1.

    with KafkaBroker(tmp / "logs", work_dir=tmp / "work") as broker:
        ...  # broker.bootstrap is "127.0.0.1:PORT"; broker.log_dir holds the partitions

`start()` formats the log dir when it has no meta.properties yet and otherwise starts on what
is there, so a broker can be started again on its own dir or on a copy of it (the recovery
tests start one on a damaged copy and watch its startup recovery). The quorum is formatted as
Kafka 4.x's quick start does it (`format --standalone`: a dynamic quorum whose voter set is a
record in __cluster_metadata); each start picks new free ports, which a single voter accepts.

Each JVM is killed when the Python process that started it dies (PR_SET_PDEATHSIG) or exits
with it still running (atexit), so no test, failing or not, leaves a broker behind.
"""

from __future__ import annotations

import atexit
import ctypes
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import kafka_jars

# Small sizes so that a few hundred records roll segments, fill indexes and wake the cleaner;
# every key can be overridden through `config`.
DEFAULT_CONFIG: dict[str, str] = {
    # Kafka 4.x refuses segments under 1 MiB; to roll after a few KB, give a topic a small
    # `segment.index.bytes` (a segment rolls when its index is full).
    "log.segment.bytes": str(1024 * 1024),
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.index.interval.bytes": "512",
    "log.retention.check.interval.ms": "1000",
    "log.cleaner.backoff.ms": "500",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024),
    "log.cleaner.threads": "1",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "log.flush.start.offset.checkpoint.interval.ms": "1000",
    "log.flush.recovery.point.checkpoint.interval.ms": "1000",
    # KRaft metadata: a snapshot (.checkpoint) after 16 KB of records or 20 s, so a run of a
    # minute or two leaves a few of them and a few metadata segments.
    "metadata.log.max.record.bytes.between.snapshots": "16384",
    "metadata.log.max.snapshot.interval.ms": "20000",
    "metadata.log.segment.bytes": str(8 * 1024 * 1024),
    "metadata.log.segment.ms": "15000",  # the metadata log rolls too
    "metadata.max.idle.interval.ms": "500",
}


def tiered_config(remote_dir: Path) -> dict[str, str]:
    """KIP-405 tiered storage on: Kafka's test RSM, LocalTieredStorage (kafka-storage's test
    jar), keeping its files in `remote_dir`/kafka-tiered-storage, and the topic-based metadata
    manager over one `__remote_log_metadata` partition. The RLM tasks run every second; a
    topic opts in with `remote.storage.enable=true` and a short `local.retention.*`."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name":
            "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(remote_dir),
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
    }


# The JVM runs small and compiles little: two cores are shared by many processes.
JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true")

LOG4J2_PROPERTIES = """\
status = error
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

_live: set[KafkaBroker] = set()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


try:  # looked up here, not in the forked child, where dlopen could wait on a lock forever
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the JVM dies with the Python process


def _read_properties(path: Path) -> dict[str, str]:
    props = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def brokers_in_metadata(bootstrap: str, timeout: float = 2.0) -> int:
    """How many live brokers a Metadata request (v12, no topics) to `bootstrap` reports."""
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"kdump-tests"
    # request header v2 (flexible): api_key 3, version 12, correlation id, client id, no tags;
    # body: topics null, allow_auto_topic_creation false, include_topic_authorized_operations
    # false, no tags.
    body = (struct.pack(">hhih", 3, 12, 1, len(client_id)) + client_id + b"\x00"
            + b"\x00" + b"\x00\x00" + b"\x00")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        response = _recv_exactly(sock, size)
    # response header v1: correlation id, tags (one 0 byte); body: throttle_time_ms, then the
    # brokers as a compact array whose unsigned varint length is count + 1.
    if struct.unpack(">i", response[:4])[0] != 1:
        raise OSError("metadata response with a foreign correlation id")
    pos, shift, count_plus_one = 4 + 1 + 4, 0, 0
    while True:
        byte = response[pos]
        count_plus_one |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            break
    return max(count_plus_one - 1, 0)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed by the broker")
        data += chunk
    return data


class KafkaBroker:
    """One KRaft broker+controller process serving `log_dir` on free loopback ports."""

    def __init__(self, log_dir: Path, *, work_dir: Path, config: dict[str, str] | None = None,
                 node_id: int = 1, classpath: str | None = None):
        self.log_dir = Path(log_dir).resolve()
        self.work_dir = Path(work_dir).resolve()
        self.node_id = node_id
        self.classpath = classpath          # None: the oracle's jars (kafka_jars.classpath())
        self.config = {**DEFAULT_CONFIG, **(config or {})}
        self.log_file = self.work_dir / "broker.log"
        self.properties_file = self.work_dir / "server.properties"
        self.bootstrap = ""
        self.proc: subprocess.Popen | None = None
        self._controller_port = 0

    # -- configuration -----------------------------------------------------------------------

    def _write_properties(self, broker_port: int, controller_port: int) -> None:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            **self.config,
        }
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.work_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)

    def _java(self, main_class: str, *args: str) -> list[str]:
        return ["java", *JVM_OPTIONS,
                f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
                "-cp", self.classpath or kafka_jars.classpath(), main_class, *args]

    # -- life cycle --------------------------------------------------------------------------

    def format(self, cluster_id: str | None = None) -> None:
        """Format log_dir for a new single-node cluster (`kafka-storage format --standalone`);
        nothing to do if it already is."""
        if (self.log_dir / "meta.properties").exists():
            return
        if not self.properties_file.exists():
            self._write_properties(free_port(), free_port())
        cluster_id = cluster_id or _random_cluster_id()
        proc = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "--cluster-id", cluster_id,
                       "--config", str(self.properties_file), "--standalone"),
            capture_output=True, text=True)
        with self.log_file.open("a") as log:
            log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({proc.returncode}):\n{self.log_tail()}")

    def start(self, timeout: float = 90) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("broker already running")
        meta = self.log_dir / "meta.properties"
        if meta.exists():
            found = _read_properties(meta).get("node.id")
            if found and int(found) != self.node_id:
                raise RuntimeError(f"{meta} is node {found}, not {self.node_id}")
        deadline = time.monotonic() + timeout
        for _ in range(3):
            # A free port can be taken by another process before the JVM binds it: try anew.
            if self._launch(deadline, timeout):
                return
        raise RuntimeError(f"the broker's ports were taken three times:\n{self.log_tail()}")

    def _launch(self, deadline: float, timeout: float) -> bool:
        """Start the JVM and wait until it serves: True; False if its ports were taken."""
        broker_port, controller_port = free_port(), free_port()
        self._write_properties(broker_port, controller_port)
        if not (self.log_dir / "meta.properties").exists():
            self.format()
        self.bootstrap = f"127.0.0.1:{broker_port}"
        self._controller_port = controller_port
        with self.log_file.open("ab") as log:
            log.write(f"---- starting {self.bootstrap} on {self.log_dir}\n".encode())
            log.flush()
            launched_at = log.tell()
            self.proc = subprocess.Popen(
                self._java("kafka.Kafka", str(self.properties_file)), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent if _prctl else None)
        _live.add(self)
        while True:
            if self.proc.poll() is not None:
                _live.discard(self)
                with self.log_file.open("rb") as log:
                    log.seek(launched_at)
                    if b"Address already in use" in log.read():
                        return False
                raise RuntimeError(f"broker exited with {self.proc.returncode} while starting:\n"
                                   f"{self.log_tail()}")
            try:
                if brokers_in_metadata(self.bootstrap) >= 1:
                    return True
            except (OSError, IndexError, struct.error):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"broker did not serve within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.3)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM and wait: a clean shutdown (.kafka_cleanshutdown is written). If the broker
        does not exit in time it is killed and TimeoutError is raised."""
        if not self.running:
            _live.discard(self)
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TimeoutError(f"broker ignored SIGTERM for {timeout:.0f}s; killed:\n{self.log_tail()}")
        finally:
            _live.discard(self)

    def kill(self) -> None:
        """SIGKILL: a crash, no shutdown work at all."""
        if self.running:
            self.proc.kill()
            self.proc.wait()
        _live.discard(self)

    def __enter__(self) -> KafkaBroker:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        except TimeoutError:
            pass  # stop() killed it already

    # -- diagnostics -------------------------------------------------------------------------

    def _log_lines(self) -> list[str] | None:
        try:
            return self.log_file.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return None

    def log_tail(self, lines: int = 60) -> str:
        text = self._log_lines()
        return "(no broker log)" if text is None else "\n".join(text[-lines:])

    def log_events(self, lines: int = 60) -> str:
        """The log's warnings, errors and fencings, wherever they are in it: a broker that
        ran a scenario and was restarted ends its log with a shutdown, not with the cause."""
        text = self._log_lines()
        if text is None:
            return "(no broker log)"
        found = [line for line in text if "] WARN " in line or "] ERROR " in line or "Fencing broker" in line]
        return "\n".join(found[-lines:]) or "(none)"

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"KafkaBroker({self.log_dir}, {self.bootstrap or 'not started'}, {state})"


def _random_cluster_id() -> str:
    """A cluster id as Kafka makes them: a random UUID, URL-safe base64 without padding, and
    never starting with '-' (kafka-storage would take it for an option)."""
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_live):
        broker.kill()
