"""Transactional offset commits (``sendOffsetsToTransaction``) written through a real broker:
six shapes of group history, one consumer group each, in one __consumer_offsets partition.

    g-commit        the transaction commits                       -> 100
    g-abort         a plain commit of 50, then the transaction aborts -> 50
    g-open          a plain commit of 50, the transaction still open at shutdown -> 50, 100 pending
    g-plain-after   a plain commit of 200 after the transactional 100, before its COMMIT -> 200
    g-tombstone     the offset deleted (OffsetDelete) while the transaction is open, then COMMIT -> none
    g-crash         a plain commit of 50, the producer killed (SIGKILL) mid transaction -> 50, 100 pending

Used by fixtures/broker/txn_offsets.py (the shipped fixture) and tests/state (a live run).
Each step is logged for the provenance. ``run`` returns ConsumerGroupCommand --describe's
answer, asked while the broker still runs, after every shape was written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import kafka_jars

TOPIC = "src"
RECORDS = 250
TRANSACTION_TIMEOUT_MS = 900_000      # the open and killed transactions must outlive the run
GROUPS = ("g-commit", "g-abort", "g-open", "g-plain-after", "g-tombstone", "g-crash")

# A transactional producer that commits its offsets in a transaction, says so on stdout and
# then waits: the parent ends the transaction (stdin "commit"/"abort") or kills it.
PRODUCER = """
import sys
from kafka import KafkaProducer
from kafka.structs import OffsetAndMetadata, TopicPartition
bootstrap, tid, group, topic, offset, timeout = sys.argv[1:7]
p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, transaction_timeout_ms=int(timeout))
p.init_transactions()
p.begin_transaction()
p.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(int(offset), "txn " + tid, -1)}, group)
print("sent", flush=True)
end = sys.stdin.readline().strip()
if end == "commit":
    p.commit_transaction()
elif end == "abort":
    p.abort_transaction()
else:
    import time
    while True:
        time.sleep(60)          # left open: the parent kills this process
p.close()
print("done", flush=True)
"""


class Transaction:
    """A transactional producer in a child process, its offsets sent and its transaction open."""

    def __init__(self, bootstrap: str, tid: str, group: str, offset: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PRODUCER, bootstrap, tid, group, TOPIC, str(offset), str(TRANSACTION_TIMEOUT_MS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "sent":
            self.proc.kill()
            raise RuntimeError(f"{tid}: the transactional producer did not send its offsets ({line!r})")

    def end(self, how: str) -> None:
        out, _ = self.proc.communicate(how + "\n", timeout=120)
        if self.proc.returncode != 0 or "done" not in out:
            raise RuntimeError(f"the transactional producer failed to {how} ({self.proc.returncode}): {out!r}")

    def leave_open(self) -> None:
        self.proc.stdin.write("open\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)


def plain_commit(bootstrap: str, group: str, offset: int) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(offset, "plain", -1)})
    c.close()


def tool(main_class: str, *args: str) -> str:
    proc = kafka_jars.java(main_class, *args, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{main_class} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
    return proc.stdout


GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def run(bootstrap: str, note=lambda how: None) -> dict:
    """Writes the six shapes; returns {"describe": ConsumerGroupCommand's output, "left": the
    processes still holding open transactions (kill them after the broker stops)}."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(RECORDS):
        p.send(TOPIC, value=b"record %d" % i, partition=0)
    p.flush()
    p.close()
    note(f"kafka-python `KafkaAdminClient.create_topics`: `{TOPIC}` (1 partition); `KafkaProducer`: {RECORDS} records")
    txn = ("kafka-python `KafkaProducer(transactional_id='{tid}', transaction_timeout_ms=900000)`: "
           "`begin_transaction()`, `send_offsets_to_transaction({{{topic}-0: {offset}}}, '{group}')`")
    plain = "kafka-python `KafkaConsumer(group_id='{group}')`: `assign` {topic}-0, `commit` {offset}"

    t = Transaction(bootstrap, "t-commit", "g-commit", 100)
    t.end("commit")
    note(txn.format(tid="t-commit", topic=TOPIC, offset=100, group="g-commit") + ", `commit_transaction()`")

    plain_commit(bootstrap, "g-abort", 50)
    t = Transaction(bootstrap, "t-abort", "g-abort", 100)
    t.end("abort")
    note(plain.format(group="g-abort", topic=TOPIC, offset=50) + "; then "
         + txn.format(tid="t-abort", topic=TOPIC, offset=100, group="g-abort") + ", `abort_transaction()`")

    plain_commit(bootstrap, "g-open", 50)
    opened = Transaction(bootstrap, "t-open", "g-open", 100)
    opened.leave_open()
    note(plain.format(group="g-open", topic=TOPIC, offset=50) + "; then "
         + txn.format(tid="t-open", topic=TOPIC, offset=100, group="g-open")
         + ", left open (the process lives on until the broker has stopped)")

    t = Transaction(bootstrap, "t-plain-after", "g-plain-after", 100)
    plain_commit(bootstrap, "g-plain-after", 200)
    t.end("commit")
    note(txn.format(tid="t-plain-after", topic=TOPIC, offset=100, group="g-plain-after") + "; then "
         + plain.format(group="g-plain-after", topic=TOPIC, offset=200) + "; then `commit_transaction()`")

    t = Transaction(bootstrap, "t-tombstone", "g-tombstone", 100)
    tool(GROUP_COMMAND, "--bootstrap-server", bootstrap, "--delete-offsets", "--group", "g-tombstone",
         "--topic", f"{TOPIC}:0")
    t.end("commit")
    note(txn.format(tid="t-tombstone", topic=TOPIC, offset=100, group="g-tombstone")
         + f"; then `java -cp <kafka jars> {GROUP_COMMAND} --delete-offsets --group g-tombstone --topic {TOPIC}:0`"
         + "; then `commit_transaction()`")

    plain_commit(bootstrap, "g-crash", 50)
    t = Transaction(bootstrap, "t-crash", "g-crash", 100)
    t.kill()
    note(plain.format(group="g-crash", topic=TOPIC, offset=50) + "; then "
         + txn.format(tid="t-crash", topic=TOPIC, offset=100, group="g-crash") + ", then the producer killed (SIGKILL)")

    time.sleep(1)
    describe = tool(GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--all-groups")
    note(f"`java -cp <kafka jars> {GROUP_COMMAND} --bootstrap-server $BOOTSTRAP --describe --all-groups` "
         "(its output: `txn-offsets.describe`)")
    return {"describe": describe, "left": [opened]}


def describe_rows(text: str) -> dict[tuple[str, str, int], int | None]:
    """ConsumerGroupCommand --describe's offset rows: (group, topic, partition) -> CURRENT-OFFSET."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 3 and f[0] != "GROUP" and f[2].isdigit():
            rows[(f[0], f[1], int(f[2]))] = None if f[3] == "-" else int(f[3])
    return rows
