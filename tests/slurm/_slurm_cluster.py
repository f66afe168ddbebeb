"""A single-node SLURM cluster on 127.0.0.1 for the end-to-end test of the slurm profile.

Everything lives under one folder: the configuration files it writes (slurm.conf, slurmdbd.conf),
the MariaDB data of the accounting database, the daemons' state, logs and PID files. The daemons
(munged, mariadbd, slurmdbd, slurmctld, slurmd) are started in the foreground of their own sessions
(``start_new_session``: they neither hold the caller's output open nor die with its process group),
each with a PID file, and :meth:`LoopbackCluster.stop` stops exactly the processes whose PID files
it wrote, never by name. A munged already serving the default socket is used and left running.

Known facts of Debian's slurm 22.05 that the configuration encodes (found by trying): it runs with
proctrack/linuxproc, task/none and select/cons_tres on NodeAddr 127.0.0.1; sacctmgr only finds munge
on its default socket /run/munge/munge.socket.2; snakemake-executor-plugin-slurm needs accounting
(slurmdbd on MariaDB) for its status checks and an explicit slurm_account; its jobstep plugin drops
SLURM_CONF before the srun inside each job, so /etc/slurm/slurm.conf links to this cluster's file
while it runs (never replacing an existing one).

Manual use: ``python tests/slurm/_slurm_cluster.py start DIR`` prints the environment to export
(SLURM_CONF), ``python tests/slurm/_slurm_cluster.py stop DIR`` stops it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PROGRAMS = ("slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd", "sacctmgr", "sbatch", "sacct")
PACKAGES = ("slurm-wlm", "slurmdbd", "munge", "mariadb-server")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
CLUSTER = "mkclustci"
ACCOUNT = "mkclust"
PARTITION = "debug"
NODE = "mkci"


def missing_programs() -> list[str]:
    return [p for p in (*PROGRAMS, "mariadb-install-db", "mariadb") if shutil.which(p) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ok, timeout: float, log: Path | None = None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ok():
            return
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s\n{tail}")


class LoopbackCluster:
    def __init__(self, root: Path, cpus: int | None = None, memory_mb: int | None = None):
        self.root = Path(root).resolve()
        self.cpus = cpus or os.cpu_count() or 1
        total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        self.memory_mb = memory_mb or int(0.8 * total_mb)
        self.conf = self.root / "etc" / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    # ------------------------------------------------------------------ processes
    def _pidfile(self, name: str) -> Path:
        return self.root / "run" / f"{name}.pid"

    def _spawn(self, name: str, argv: list[str]):
        """Start a daemon in the foreground of a new session; its PID goes to run/<name>.pid."""
        log = self.root / "log" / f"{name}.out"
        with open(log, "ab") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=self.env, start_new_session=True, cwd=self.root)
        self._pidfile(name).write_text(f"{p.pid}\n")
        time.sleep(0.2)
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited at once ({p.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        return p

    def _run(self, argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    # ------------------------------------------------------------------ start
    def start(self) -> "LoopbackCluster":
        missing = missing_programs()
        if missing:
            raise RuntimeError(f"SLURM test cluster: missing programs {missing} (Debian: apt-get install "
                               f"{' '.join(PACKAGES)})")
        for sub in ("etc", "run", "log", "state", "spool", "mysql", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        ports = {k: _free_port() for k in ("mysql", "dbd", "ctld", "slurmd")}
        try:
            self._start_munge()
            self._start_mariadb(ports["mysql"])
            self._write_conf(ports)
            self._link_default_conf()
            self._start_slurmdbd(ports["dbd"])
            self._register_accounts()
            self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
            _wait("slurmctld", lambda: self._run(["scontrol", "ping"], check=False).stdout.count("UP") > 0,
                  60, self.root / "log" / "slurmctld.log")
            self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", str(self.conf)])
            _wait("the node", self._node_idle, 60, self.root / "log" / "slurmd.log")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_munge(self):
        if MUNGE_SOCKET.exists() and subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
            return  # a munged of this machine serves the default socket: use it, leave it running
        MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(MUNGE_SOCKET.parent, 0o755)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chmod(key.parent, 0o700)
        self._spawn("munged", ["munged", "-F", "--force", f"--key-file={key}", f"--socket={MUNGE_SOCKET}",
                               f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                               f"--log-file={self.root / 'log' / 'munged.log'}",
                               f"--seed-file={self.root / 'munge' / 'munged.seed'}"])
        _wait("munged", lambda: subprocess.run(["munge", "-n"], capture_output=True).returncode == 0, 30,
              self.root / "log" / "munged.log")

    def _start_mariadb(self, port: int):
        data = self.root / "mysql"
        sock = self.root / "run" / "mysql.sock"
        if not (data / "mysql").exists():
            self._run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                       "--auth-root-authentication-method=socket", "--skip-test-db"], timeout=180)
        self._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
                                 f"--port={port}", "--bind-address=127.0.0.1", "--user=root",
                                 f"--pid-file={self.root / 'run' / 'mariadbd.own.pid'}",
                                 f"--log-error={self.root / 'log' / 'mariadb.log'}"])
        sql = ["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root"]
        _wait("mariadb", lambda: self._run([*sql, "-e", "SELECT 1"], check=False).returncode == 0, 60,
              self.root / "log" / "mariadb.log")
        self._run([*sql, "-e",
                   "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';"
                   "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';"
                   "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
                   "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"])

    def _write_conf(self, ports: dict):
        r = self.root
        host = socket.gethostname()
        self.conf.write_text(f"""\
ClusterName={CLUSTER}
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ports['ctld']}
SlurmdPort={ports['slurmd']}
AuthType=auth/munge
CryptoType=crypto/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'run' / 'slurmctld.own.pid'}
SlurmdPidFile={r / 'run' / 'slurmd.own.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports['dbd']}
AccountingStoreFlags=job_comment
MinJobAge=600
InactiveLimit=0
KillWait=5
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        dbd = self.conf.parent / "slurmdbd.conf"
        dbd.write_text(f"""\
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['dbd']}
SlurmUser=root
PidFile={r / 'run' / 'slurmdbd.own.pid'}
LogFile={r / 'log' / 'slurmdbd.log'}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mysql']}
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
""")
        os.chmod(dbd, 0o600)

    def _link_default_conf(self):
        """snakemake-executor-plugin-slurm-jobstep removes SLURM_CONF from the environment of the
        ``srun`` it starts inside each job, so srun reads the default /etc/slurm/slurm.conf: point it
        at this cluster's file while it runs (only where no slurm.conf exists; removed by stop)."""
        if DEFAULT_CONF.is_symlink() and not DEFAULT_CONF.exists():
            DEFAULT_CONF.unlink()  # a dangling link left by a killed run
        if DEFAULT_CONF.exists() or DEFAULT_CONF.is_symlink():
            if DEFAULT_CONF.resolve() != self.conf:
                raise RuntimeError(f"{DEFAULT_CONF} belongs to another SLURM installation; the loopback test "
                                   f"cluster will not replace it")
            return
        DEFAULT_CONF.parent.mkdir(parents=True, exist_ok=True)
        DEFAULT_CONF.symlink_to(self.conf)
        (self.root / "run" / "default_conf.link").write_text(str(DEFAULT_CONF))

    def _start_slurmdbd(self, port: int):
        self._spawn("slurmdbd", ["slurmdbd", "-D"])

        def listening():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0
        _wait("slurmdbd", listening, 60, self.root / "log" / "slurmdbd.log")

    def _register_accounts(self):
        sacctmgr = ["sacctmgr", "-i"]
        _wait("sacctmgr", lambda: self._run([*sacctmgr, "add", "cluster", CLUSTER], check=False).returncode
              in (0, 1) and CLUSTER in self._run(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"],
                                                   check=False).stdout, 60, self.root / "log" / "slurmdbd.log")
        self._run([*sacctmgr, "add", "account", ACCOUNT, f"cluster={CLUSTER}"], check=False)
        user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        self._run([*sacctmgr, "add", "user", user, f"account={ACCOUNT}", f"cluster={CLUSTER}"], check=False)
        assoc = self._run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=account"]).stdout
        if ACCOUNT not in assoc.split():
            raise RuntimeError(f"sacctmgr did not register {user} in account {ACCOUNT}: {assoc!r}")

    def _node_idle(self) -> bool:
        out = self._run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout
        return f"{NODE} idle" in out

    # ------------------------------------------------------------------ stop
    def stop(self):
        """Stop the daemons this cluster started, newest first, by their PID files."""
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            pidfile = self._pidfile(name)
            if not pidfile.exists():
                continue
            pid = int(pidfile.read_text())
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pidfile.unlink()
                continue
            end = time.monotonic() + 20
            while time.monotonic() < end and alive(pid):
                time.sleep(0.1)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
            pidfile.unlink()
        link = self.root / "run" / "default_conf.link"
        if link.exists():
            if DEFAULT_CONF.is_symlink() and DEFAULT_CONF.resolve() == self.conf:
                DEFAULT_CONF.unlink()
            link.unlink()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def alive(pid: int) -> bool:
    """Whether a process still runs (a reaped child or a zombie counts as gone)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # reap it when it is our child
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of another parent counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    cmd, folder = sys.argv[1], Path(sys.argv[2])
    c = LoopbackCluster(folder)
    if cmd == "start":
        c.start()
        print(f"export SLURM_CONF={c.conf}")
    elif cmd == "stop":
        c.stop()
    else:
        raise SystemExit("usage: _slurm_cluster.py start|stop DIR")
