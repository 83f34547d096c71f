"""Starting Spark for kdump: loopback only, quiet, no UI, and a clear error when it cannot start.

Defaults (each can be overridden with ``--conf``/``conf``):

* every socket on 127.0.0.1 (``SPARK_LOCAL_IP``, ``spark.driver.host``/``bindAddress``):
  by default the driver binds the machine's public address, which kdump never needs;
* no UI and no progress bar; a log4j2 file (written to a temp file at start, removed at
  exit) that sets both the root logger and ``org.apache.spark`` to ERROR, since either
  alone leaves a screenful of INFO lines;
* Python filter pushdown on (the kafka-log reader implements ``pushFilters``, and Spark
  fails every query of such a reader while the conf is off);
* Parquet timestamps as TIMESTAMP_MILLIS (Spark's default is legacy INT96), session in UTC;
* workers run this interpreter when the cluster is on this machine, and the kdump
  package is shipped as a zip when the master is not ``local``.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from urllib.parse import urlparse

from kdump.errors import KdumpError, install_hint

DEFAULT_MASTER = "local[*]"
MIN_JAVA = 17
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Passed on to the executors (s3:// and hdfs:// PATHs); credentials are not: each executor
# finds its own (its environment, ~/.aws, an instance profile), as Hadoop's s3a does.
REMOTE_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
              "KDUMP_REMOTE_TIMEOUT", "KDUMP_REMOTE_RETRIES")

LOG4J2 = """\
# kdump: Spark's own logging down to errors (root AND org.apache.spark, or INFO leaks through)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.sparkproject.name = org.sparkproject
logger.sparkproject.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""

_temp_files: list[str] = []


class SparkUnavailableError(KdumpError):
    """pyspark or a suitable Java is missing: the run cannot complete (exit 3)."""


def _cleanup() -> None:
    for path in _temp_files:
        try:
            os.unlink(path)
        except OSError:
            pass


atexit.register(_cleanup)


# -- requirements --------------------------------------------------------------------------------

def java_command() -> str | None:
    """The java Spark will run: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_major(java: str) -> int | None:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major     # "1.8.0_x" is Java 8


def check_requirements() -> None:
    """Raise SparkUnavailableError naming what is missing (pyspark, pyarrow or Java 17+)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError("--engine spark needs pyspark, which is not installed",
                                    hint=install_hint("spark")) from None
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SparkUnavailableError("--engine spark needs pyarrow, which is not installed",
                                    hint=install_hint("spark")) from None
    java = java_command()
    if java is None:
        where = "JAVA_HOME" if os.environ.get("JAVA_HOME") else "PATH"
        raise SparkUnavailableError(f"--engine spark needs Java {MIN_JAVA} or newer; no java found on {where}",
                                    hint="install a JDK 17 (e.g. openjdk-17-jre-headless) or set JAVA_HOME")
    major = java_major(java)
    if major is None or major < MIN_JAVA:
        found = "an unknown version" if major is None else f"Java {major}"
        raise SparkUnavailableError(f"--engine spark needs Java {MIN_JAVA} or newer; {java} is {found}",
                                    hint="install a JDK 17 or point JAVA_HOME at one")


# -- configuration -------------------------------------------------------------------------------

def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def master_on_this_machine(master: str) -> bool:
    if is_local_master(master):
        return True
    host = urlparse(master.split(",")[0]).hostname
    return host in ("127.0.0.1", "localhost", "::1")


def log4j_file() -> str:
    fd, path = tempfile.mkstemp(prefix="kdump-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(LOG4J2)
    _temp_files.append(path)
    return path


def session_conf(master: str, conf: dict[str, str] | None = None, cores: int | None = None) -> dict[str, str]:
    """Every setting kdump starts Spark with; ``conf`` wins over the defaults."""
    conf = dict(conf or {})
    java_opts = f"-Dlog4j.configurationFile=file:{log4j_file()}"
    if conf.get("spark.driver.extraJavaOptions"):
        java_opts += " " + conf.pop("spark.driver.extraJavaOptions")
    cores = cores or os.cpu_count() or 2
    out = {
        "spark.master": master,
        "spark.app.name": "kdump",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": java_opts,
        PUSHDOWN_CONF: "true",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(max(2, cores)),
    }
    for name in REMOTE_ENV:     # where the store is and how long to wait: executors read it too
        if os.environ.get(name):
            out[f"spark.executorEnv.{name}"] = os.environ[name]
    if master_on_this_machine(master) and "PYSPARK_PYTHON" not in os.environ:
        # Workers on this machine run this interpreter, which has kdump and its codecs.
        # (The driver-side planner workers read only the environment variable.)
        out["spark.pyspark.python"] = sys.executable
    out.update(conf)
    return out


def package_zip() -> str:
    """A zip of the kdump package (sources only) for executors that do not have it installed."""
    import kdump

    root = os.path.dirname(os.path.abspath(kdump.__file__))
    fd, path = tempfile.mkstemp(prefix="kdump-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for dirpath, dirnames, names in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in names:
                if name.endswith((".py", ".json", ".typed")):
                    full = os.path.join(dirpath, name)
                    z.write(full, os.path.join("kdump", os.path.relpath(full, root)))
    _temp_files.append(path)
    return path


# -- the session ---------------------------------------------------------------------------------

def get_session(master: str | None = None, conf: dict[str, str] | None = None):
    """A SparkSession with kdump's defaults and data sources registered.

    When a session is already active in this process (a test fixture, a notebook) it is
    reused as it is, with kdump's data sources registered on it: Spark cannot change the
    master or JVM options of a running context.
    """
    check_requirements()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        from kdump.spark.source import register

        register(active)
        return active
    master = master or os.environ.get("KDUMP_SPARK_MASTER") or DEFAULT_MASTER
    # Read by the JVM launcher and by every Spark process it starts: loopback only.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = session_conf(master, conf)
    if "spark.pyspark.python" in settings:
        os.environ.setdefault("PYSPARK_PYTHON", settings["spark.pyspark.python"])
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # noqa: BLE001 - py4j/JVM start-up failures have many types
        raise KdumpError(f"could not start Spark ({master}): {type(e).__name__}: {str(e).splitlines()[0][:300]}",
                         hint="rerun with --debug for the Java output") from None
    spark.sparkContext.setLogLevel("ERROR")
    if not is_local_master(master):
        spark.sparkContext.addPyFile(package_zip())
    from kdump.spark.source import register

    register(spark)
    return spark


def owns_session() -> bool:
    """True when no session is active yet, so a caller creating one should also stop it."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return True
    return SparkSession.getActiveSession() is None
