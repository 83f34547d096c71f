"""The test suite's one support package: ``support.run`` runs kdump and names the fixtures,
``support.damage`` damages copies of segments and partitions the way disks and crashes do
(and runs kdump killed mid-write), ``support.peers`` reads segments with kafka-python, the
independent oracle. tests/conftest.py puts tests/ on sys.path."""
