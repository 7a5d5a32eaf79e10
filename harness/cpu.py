"""CPU time by role during a bench phase, read from /proc (Linux): the server's process group, the
PostgreSQL server's processes, a private Redis, and the bench's client processes. Tells where a
request's CPU goes on a machine whose cores every role shares, which a throughput figure alone does
not."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[str, int, float] | None:
    """(command name, process group, CPU seconds) of ``pid``; None once it has gone. The seconds are its
    own (user + system) and those of its children it has reaped: a PostgreSQL backend that ends (a
    connection past ``CONN_MAX_AGE``) or a gunicorn worker that restarts takes its time out of the
    live processes and into its parent's, so a long phase loses none of it."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is the state (stat's 3rd field): the group is the 5th, utime and stime the 14th and 15th,
    # cutime and cstime (reaped children) the 16th and 17th.
    return name, int(fields[2]), sum(int(value) for value in fields[11:15]) / TICKS


def _processes():
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                yield int(entry.name), stat


@dataclass(frozen=True)
class CpuSample:
    seconds: dict[str, float]  # role -> CPU seconds used so far by the role's live processes

    def minus(self, earlier: CpuSample) -> dict[str, float]:
        return {role: self.seconds[role] - earlier.seconds.get(role, 0.0) for role in self.seconds}


def sample(*, server_group: int, redis_pid: int | None = None, client_pids: tuple[int, ...] = ()) -> CpuSample:
    """CPU seconds so far of: ``server`` (every process in the server's group), ``postgres`` (every
    process named postgres: the whole cluster, which the bench shares with nothing it starts),
    ``redis`` (the private Redis) and ``client`` (the client processes, with their threads)."""
    seconds = {"server": 0.0, "postgres": 0.0, "redis": 0.0, "client": 0.0}
    clients = set(client_pids)
    for pid, (name, group, cpu) in _processes():
        if group == server_group:
            seconds["server"] += cpu
        elif pid in clients:
            seconds["client"] += cpu
        elif name == "postgres":
            seconds["postgres"] += cpu
        elif pid == redis_pid:
            seconds["redis"] += cpu
    return CpuSample(seconds)


def per_request_ms(used: dict[str, float], requests: int) -> dict[str, float]:
    """CPU milliseconds per request by role, and their total."""
    shares = {role: value * 1000 / max(requests, 1) for role, value in used.items()}
    shares["total"] = sum(shares.values())
    return shares
