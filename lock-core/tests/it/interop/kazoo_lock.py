"""A kazoo `Lock` driven line by line by `tests/it/zookeeper_interop.rs`.

Usage: kazoo_lock.py HOSTS LOCK_PATH MARKER

The lock is kazoo's own recipe (`<uuid>__lock__<sequence>` children) on the lock path our
backend uses, told to treat Curator-named children (`...-lock-<sequence>`, ours) as contenders
too: `extra_lock_patterns` is kazoo's switch for sharing a lock with another implementation.

Commands on stdin, one per line, each answered on stdout:
  acquire  -> "waiting" before blocking on the lock, then "held clear" or "held overlap"
  release  -> "released"
  quit     -> exits
MARKER is the overlap detector both sides share: whoever enters the critical section creates
it exclusively (O_EXCL) and removes it before releasing; finding it already there means the
other side is inside at the same moment, an overlap.

Exit status 3 when kazoo cannot be imported, so the test can say what is missing.
"""

import os
import sys

try:
    from kazoo.client import KazooClient
except ImportError as error:
    print(f"kazoo is not importable: {error}", file=sys.stderr)
    sys.exit(3)

# Long enough for any honest wait in the test, short enough that a stuck run ends.
ACQUIRE_TIMEOUT_S = 20


def reply(line):
    print(line, flush=True)


def main():
    hosts, lock_path, marker = sys.argv[1:4]
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=10)
    lock = client.Lock(lock_path, "kazoo-interop", extra_lock_patterns=["-lock-"])
    owns_marker = False
    reply("ready")
    for command in sys.stdin:
        command = command.strip()
        if command == "acquire":
            reply("waiting")
            if not lock.acquire(timeout=ACQUIRE_TIMEOUT_S):
                reply("timeout")
                continue
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                owns_marker = True
                reply("held clear")
            except FileExistsError:
                owns_marker = False
                reply("held overlap")
        elif command == "release":
            if owns_marker:
                os.remove(marker)
                owns_marker = False
            lock.release()
            reply("released")
        elif command == "quit":
            break
        else:
            reply(f"unknown command {command!r}")
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
