"""Pytest fixtures around tests/kafka/broker.py; tests/conftest.py imports them.

- `kafka_broker`: one broker for the whole session (started on first use, stopped at the end).
- `make_broker(log_dir, *, start=True, **config)`: brokers of one test, each on its own log dir
  (e.g. a copy of another broker's); all are stopped, or killed, at the test's teardown.

A failing test gets, for every broker it used (its own or a fixture's), the log tail and
the log's warnings, errors and fencings as report sections.
"""

from __future__ import annotations

from pathlib import Path

import kafka_jars
import pytest
from broker import KafkaBroker


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("kafka-session")
    broker = KafkaBroker(root / "logs", work_dir=root / "work")
    try:
        broker.start()
        yield broker
    finally:
        _shut(broker)


class BrokerFactory:
    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.brokers: list[KafkaBroker] = []

    def __call__(self, log_dir: Path, *, start: bool = True, node_id: int = 1, classpath: str | None = None,
                 **config: str) -> KafkaBroker:
        work_dir = self.tmp_path / f"broker-work-{len(self.brokers)}"
        broker = KafkaBroker(Path(log_dir), work_dir=work_dir, node_id=node_id, classpath=classpath,
                             config={k: str(v) for k, v in config.items()})
        self.brokers.append(broker)
        if start:
            broker.start()
        return broker

    def close(self) -> None:
        for broker in self.brokers:
            _shut(broker)


@pytest.fixture
def make_broker(tmp_path):
    kafka_jars.ensure_jars()
    factory = BrokerFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


def _shut(broker: KafkaBroker) -> None:
    try:
        broker.stop(timeout=30)
    except TimeoutError:
        pass  # stop() killed it


def _brokers_of(item) -> list[KafkaBroker]:
    found = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, KafkaBroker):
            found.append(value)
        elif isinstance(value, BrokerFactory):
            found.extend(value.brokers)
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for broker in _brokers_of(item):
            report.sections.append((f"kafka broker log ({broker.log_file})", broker.log_tail()))
            report.sections.append((f"kafka broker warnings and fencings ({broker.log_file})",
                                    broker.log_events()))
