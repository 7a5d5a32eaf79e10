"""Processes and databases of a live crowdbench: PostgreSQL databases and clusters, Redis, gunicorn, Celery.

Every service here is private to its caller (own database, port, data folder), so stopping or killing
it disturbs nothing else on the machine.
"""
from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
# Bounds on waiting for a service to come up or go away: reached only when something is broken.
START_SECONDS = 300
STOP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def wait_for(condition, what: str, *, seconds: float = START_SECONDS, pause: float = 0.1):
    """Poll ``condition`` until it returns something true; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {seconds:g} s")
        time.sleep(pause)


# --- PostgreSQL -----------------------------------------------------------------------------------


def create_database(admin_url: str, name: str) -> str:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return database_url(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(env: dict, *args: str) -> None:
    """``python manage.py ARGS`` in a child process with ``env`` (its own settings, its own database)."""
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def postgres_bindir() -> Path:
    """The PostgreSQL server programs: ``pg_config --bindir``, else the newest Debian install."""
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if (Path(found) / "initdb").exists():
            return Path(found)
    except (OSError, subprocess.CalledProcessError):
        pass
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not candidates:
        raise RuntimeError("PostgreSQL server programs (initdb, pg_ctl) not found")
    return Path(candidates[-1]).parent


class PrivatePostgres:
    """A PostgreSQL cluster of its own (temporary data folder, own port and socket folder, trust auth),
    which its owner may stop and start without touching any other server.

    PostgreSQL refuses to run as root: as root the programs run as the ``postgres`` user."""

    def __init__(self):
        self.bindir = postgres_bindir()
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="cb-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.admin_url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "120", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", str(STOP_SECONDS), "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        if self.running():
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


# --- Redis ----------------------------------------------------------------------------------------


class PrivateRedis:
    """A redis-server of its own on a free port, in memory only, that its owner may kill."""

    def __init__(self):
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--loglevel", "warning"], stdout=subprocess.DEVNULL, start_new_session=True)
        wait_for(self.answers, f"redis-server on port {self.port}")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_SECONDS)


# --- gunicorn and Celery --------------------------------------------------------------------------


def server_environment(*, database_url: str, cache_url: str = "", static_root: str, **extra: str) -> dict:
    """The environment of a production-like server on 127.0.0.1: ``DEBUG`` off with a fresh secret key,
    plain HTTP, rate limits off (every simulated worker comes from one address); ``extra`` overrides."""
    env = {
        **os.environ, "DATABASE_URL": database_url, "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost", "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0", "SECURE_HSTS_SECONDS": "0", "RATE_LIMITS_ENABLED": "0",
        "CACHE_URL": cache_url, "LOG_LEVEL": "WARNING",
        # DEBUG off serves collected, hashed static files: the login page needs them.
        "STATIC_ROOT": static_root,
    }
    env.pop("TEST_DATABASE_NAME", None)
    env.update(extra)
    return env


def start_gunicorn(env: dict, port: int, *, log=None) -> subprocess.Popen:
    """gunicorn with the repository's ``gunicorn.conf.py`` on 127.0.0.1:``port``, in a process group
    of its own (``stop_group`` ends it with its workers)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "crowdbench.wsgi"],
        cwd=ROOT, env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}"}, start_new_session=True,
        stdout=log, stderr=log)


def wait_until_up(base_url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("gunicorn exited during start-up")
        try:
            if httpx.get(f"{base_url}/health/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer /health/ within {START_SECONDS} s")


def start_celery_worker(env: dict, *, concurrency: int = 1, log=None) -> subprocess.Popen:
    """``celery -A crowdbench worker`` (prefork pool) in a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "crowdbench", "worker", "--loglevel", "INFO",
         "--concurrency", str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, start_new_session=True, stdout=log, stderr=log)


def stop_group(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to the process group ``process`` leads and wait for it to exit."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_SECONDS)


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (e.g. gunicorn's workers under its master), from /proc."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the fields after it are fixed.
        fields = text[text.rfind(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.split("/")[2]))
    return sorted(found)


def harness_command(env: dict, *args: str, stdin: str = "") -> dict:
    """``python -m harness ARGS`` against the database of ``env`` (see ``harness/__main__.py``)."""

    done = subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"python -m harness {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)
