"""Run kdump in a child process that SIGKILLs itself at its n-th file-system change.

``python killpoint.py N COUNT_FILE ARGS...`` runs ``kdump ARGS`` (through ``kdump.cli.main``,
as the console script does) and counts the calls after which another process could see a
different directory: a write, a rename or replace, a truncate, an unlink, a link, a mkdir,
a file created. At the N-th it sends itself SIGKILL first (no cleanup, no ``finally``: what
a power cut or ``kill -9`` leaves). N = 0 never kills, and writes the number of changes
counted to COUNT_FILE (an uninterrupted run's kill points are 1..that number).

Every ``os`` function kdump writes through is wrapped here, in the child only.
"""

from __future__ import annotations

import builtins
import os
import signal
import sys

MUTATING = ("write", "pwrite", "replace", "rename", "ftruncate", "truncate", "unlink", "remove", "rmdir", "link",
            "mkdir", "makedirs", "symlink")


def install(n: int) -> list[int]:
    count = [0]

    def step() -> None:
        count[0] += 1
        if count[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(orig):
        def call(*a, **k):
            step()
            return orig(*a, **k)
        return call

    for name in MUTATING:
        if hasattr(os, name):
            setattr(os, name, wrap(getattr(os, name)))
    real_os_open = os.open

    def os_open(path, flags, *a, **k):
        if flags & (os.O_CREAT | os.O_TRUNC):
            step()
        return real_os_open(path, flags, *a, **k)

    os.open = os_open
    real_open = builtins.open

    def guarded_open(file, mode="r", *a, **k):
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            step()
        return real_open(file, mode, *a, **k)

    builtins.open = guarded_open
    return count


def main() -> None:
    n, count_file, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    real_open, real_write, real_close = os.open, os.write, os.close
    count = install(n)
    from kdump.cli import main as kdump_main

    try:
        kdump_main(args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    else:
        code = 0
    if n == 0:
        fd = real_open(count_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        real_write(fd, str(count[0]).encode())
        real_close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
