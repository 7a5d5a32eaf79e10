"""The load bench's CPU accounting counts a process group's CPU time as the server's."""
import subprocess
import sys
import time

from harness import cpu

# Waits for a line, burns 0.4 s of CPU, then waits for the end of its input before it exits.
BURN = ("import sys, time\nsys.stdin.readline()\nend = time.process_time() + 0.4\n"
        "while time.process_time() < end: pass\nsys.stdin.read()\n")


def test_a_busy_process_group_is_counted_as_the_server_and_idle_roles_stay_near_zero():
    process = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        before = cpu.sample(server_group=process.pid)
        process.stdin.write("go\n")
        process.stdin.flush()
        deadline = time.monotonic() + 30
        while (used := cpu.sample(server_group=process.pid).minus(before))["server"] < 0.39:
            assert time.monotonic() < deadline, used
            time.sleep(0.02)
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert 0.39 <= used["server"] < 5
    assert used["redis"] == 0.0
    per_request = cpu.per_request_ms(used, requests=4)
    assert per_request["server"] == used["server"] * 250
    assert per_request["total"] == sum(value for role, value in per_request.items() if role != "total")
