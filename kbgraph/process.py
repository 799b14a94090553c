"""Process helpers shared by the server launchers (embedded FalkorDB, local Neo4j)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True if ``pid`` is a live (not zombie) process; reaps it if it is our exited child."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError, IndexError):
        # the state is the field after the parenthesised command name
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True
