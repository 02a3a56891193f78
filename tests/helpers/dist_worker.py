"""``python -m xeval`` with two test hooks, for the multi-worker tests (run as a script, alone or under torchrun).

- every record a process stores is logged: one line ``<pid> <rank> <record path in the store>`` appended to
  ``$XEVAL_TEST_PUT_LOG`` (so a test sees which process computed each unit, and whether any was computed twice);
- ``$XEVAL_TEST_KILL=<rank>:<n>``: that rank SIGKILLs itself right after storing its n-th record, i.e. in the middle
  of the run, while its next unit is being computed (no cleanup runs, as when a node dies or the OOM killer strikes).
"""

from __future__ import annotations

import os
import signal
import sys

from xeval.cli import main
from xeval.results import store as results

_put = results.Store.put
_count = 0


def _logged_put(self, record, *args, **kwargs):
    global _count
    path = _put(self, record, *args, **kwargs)
    rank = int(os.environ.get("RANK", "0"))
    with open(os.environ["XEVAL_TEST_PUT_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {rank} {path.relative_to(self.root).as_posix()}\n")
    _count += 1
    kill = os.environ.get("XEVAL_TEST_KILL")
    if kill:
        who, after = map(int, kill.split(":"))
        if who == rank and _count >= after:
            os.kill(os.getpid(), signal.SIGKILL)
    return path


results.Store.put = _logged_put

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
