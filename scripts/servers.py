"""Throwaway servers for the tests: a PostgreSQL cluster and an S3-compatible object store.

PostgreSQL comes from Debian's packages (``make configure`` installs them when missing: see
``scripts/install_postgres.sh``); its cluster lives in a temporary directory and listens on a
free loopback port with password authentication. The object store is moto's server mode
(``moto[server]`` from PyPI, in the venv), also on a free loopback port. Both stop when
:meth:`Servers.stop` runs (the tests' session fixture calls it at the end).

Nothing here skips: if a server cannot start, :class:`ServerError` says which one and why.

    .venv/bin/python scripts/servers.py start /tmp/srdp-servers   # prints the connection info
    .venv/bin/python scripts/servers.py stop /tmp/srdp-servers
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

STATE_FILE = "servers.json"


class ServerError(RuntimeError):
    """A server could not be started; the message says which and why."""


@dataclass
class Servers:
    workdir: str
    pg_port: int
    pg_superuser: str
    pg_password: str
    pg_bin: str
    pg_data: str
    s3_port: int
    s3_pid: int
    s3_access_key: str = "srdp-test-key"
    s3_secret_key: str = "srdp-test-secret"
    s3_region: str = "us-east-1"

    @property
    def s3_endpoint(self) -> str:
        return f"127.0.0.1:{self.s3_port}"

    def psql(self, sql: str, database: str = "postgres", user: str | None = None, password: str | None = None) -> str:
        """Runs ``sql`` through psql over TCP and returns its output (raises on error)."""
        env = {**os.environ, "PGPASSWORD": password or self.pg_password}
        result = subprocess.run(
            [
                str(Path(self.pg_bin) / "psql"),
                "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", user or self.pg_superuser,
                "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql,
            ],
            env=env, capture_output=True, text=True, timeout=60,
        )
        if result.returncode != 0:
            raise ServerError(f"psql failed: {result.stderr.strip()}")
        return result.stdout

    def stop(self) -> None:
        """Stops both servers (idempotent)."""
        _as_postgres([str(Path(self.pg_bin) / "pg_ctl"), "-D", self.pg_data, "-m", "immediate", "-w", "stop"], check=False)
        try:
            os.kill(self.s3_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    def save(self) -> None:
        Path(self.workdir, STATE_FILE).write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, workdir: str | os.PathLike) -> Servers:
        return cls(**json.loads(Path(workdir, STATE_FILE).read_text()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir() -> Path:
    """The newest Debian PostgreSQL server binaries."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not candidates:
        raise ServerError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; "
            "run `make configure` (scripts/install_postgres.sh installs Debian's postgresql package)"
        )
    return candidates[-1].parent


def _as_postgres(cmd: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Runs ``cmd`` as the postgres user when we are root (initdb refuses to run as root)."""
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if check and result.returncode != 0:
        raise ServerError(f"`{' '.join(cmd)}` failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")
    return result


def start_postgres(workdir: Path) -> tuple[int, str, str, str]:
    bindir = pg_bindir()
    data = workdir / "pgdata"
    sock = workdir / "pgsock"
    data.mkdir()
    sock.mkdir()
    password = secrets.token_hex(16)
    pwfile = workdir / "pgpass"
    pwfile.write_text(password + "\n")
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres")
        for p in (data, sock, pwfile):
            shutil.chown(p, "postgres")
    pwfile.chmod(0o600)
    _as_postgres([
        str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
        "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync",
    ])
    pwfile.unlink()
    port = free_port()
    log = workdir / "postgres.log"
    if os.geteuid() == 0:
        log.touch()
        shutil.chown(log, "postgres")
    _as_postgres([
        str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
        "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {sock} -c fsync=off -c max_connections=200",
        "start",
    ])
    return port, password, str(bindir), str(data)


def start_s3(workdir: Path) -> tuple[int, int]:
    port = free_port()
    exe = Path(sys.executable).with_name("moto_server")
    if not exe.exists():
        raise ServerError(f"{exe} not found; run `make configure` (moto[server] is in python/requirements.txt)")
    log = open(workdir / "moto.log", "w")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"moto_server exited ({proc.returncode}): {(workdir / 'moto.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
            return port, proc.pid
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise ServerError(f"moto_server did not answer on 127.0.0.1:{port} within 60 s")


def start(workdir: str | os.PathLike) -> Servers:
    """Starts both servers under ``workdir`` (created; must not exist)."""
    root = Path(workdir)
    root.mkdir(parents=True)
    pg_port, pg_password, pg_bin, pg_data = start_postgres(root)
    try:
        s3_port, s3_pid = start_s3(root)
    except Exception:
        _as_postgres([str(Path(pg_bin) / "pg_ctl"), "-D", pg_data, "-m", "immediate", "-w", "stop"], check=False)
        raise
    servers = Servers(str(root), pg_port, "postgres", pg_password, pg_bin, pg_data, s3_port, s3_pid)
    servers.save()
    return servers


def create_bucket(servers: Servers, bucket: str) -> None:
    """Creates a bucket in the object store (moto accepts any credentials)."""
    req = urllib.request.Request(f"http://{servers.s3_endpoint}/{bucket}", method="PUT")
    urllib.request.urlopen(req, timeout=10).read()


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in {"start", "stop"}:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "start":
        servers = start(argv[2])
        print(json.dumps({k: v for k, v in asdict(servers).items() if k != "pg_password"}, indent=2))
    else:
        Servers.load(argv[2]).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
