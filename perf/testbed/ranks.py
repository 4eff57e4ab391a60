"""Starts the ranks of one system in the bed's namespaces.

- PReCCL (`preccl-<policy>`): ranks_per_host `preccl-perf` processes in every host namespace, joined
  through the environment (PRECCL_RANK / PRECCL_NRANKS / PRECCL_ROOT_ADDR), rank 0 hosting the bootstrap
  root on its rail-0 address; PRECCL_POLICY=<policy>, PRECCL_ALGO=<algo> for `preccl-<policy>-<algo>`, and
  PRECCL_RELAY=off for `...-norelay` (the same-host relay of rail affinity off).
- Gloo (`gloo[-<algorithm>]`): `perf-gloo -t <collective> --rank r --size n --store DIR --ifaces
  rail0,rail1,...` in every namespace: one Gloo context per rail (its TCP device binds the rail's
  address), operations round-robin over them.
- OpenMPI (`openmpi[-<algorithm>]`): one `mpirun ... perf-mpi -t <collective>` in host 0's namespace (under
  its own UTS namespace, hostname = the namespace's name); it reaches the other hosts through
  mpi_rsh_agent.sh (`ip netns exec` + `unshare --uts`). The TCP BTL stripes over every rail subnet; the
  out-of-band channel stays on rail 0. A forced algorithm is coll_tuned's MCA setting (peers.py).
- torch (`torch-preccl`, `torch-gloo`, `-ddp`): one `torchrun` per host namespace (static rendezvous at
  host 0's rail-0 address), ranks_per_host workers each running perf/torch_bench.py with that backend;
  PYTHONPATH names the build's python directory (preccl_torch). PReCCL finds the rails as for
  `preccl-*` (with the scenario's env), Gloo gets one device per rail (GLOO_SOCKET_IFNAME=rail0,rail1,...).
Every system gets --iter-csv (rank 0 writes one row per timed iteration).
"""
import os
import re
import shutil
import signal
import subprocess
import time

from . import bed_names as names
from . import leg_files
from . import peers

ROOT_PORT = 29500
TORCH_PORT = 29400
TORCH_PYTHON = "/usr/bin/python3"  # Debian's, the one with python3-torch
HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_BENCH = os.path.join(os.path.dirname(HERE), "torch_bench.py")
TORCHRUN = os.path.join(os.path.dirname(HERE), "torchrun.py")  # torchrun, fixed for torch 1.13 on Python 3.11
RSH_AGENT = os.path.join(HERE, "mpi_rsh_agent.sh")


def perf_args(sc):
    return ["-t", sc.collective, "-b", str(sc.min_bytes), "-e", str(sc.max_bytes), "-n", str(sc.iters),
            "-w", str(sc.warmup), "-c", "1" if sc.check else "0", "-d", sc.dtype, "-o", sc.op]


def peer_args(sc):
    """The peers measure float sum only: no -d/-o."""
    return ["-t", sc.collective, "-b", str(sc.min_bytes), "-e", str(sc.max_bytes), "-n", str(sc.iters),
            "-w", str(sc.warmup), "-c", "1" if sc.check else "0"]


def preccl_system(system):
    """`preccl-<policy>[-tree|-ring][-norelay]` -> (policy, algo or None, whether the relay is off)."""
    rest = system[len("preccl-"):]
    norelay = rest.endswith("-norelay")
    if norelay:
        rest = rest[:-len("-norelay")]
    for algo in ("tree", "ring"):
        if rest.endswith("-" + algo):
            return rest[:-len(algo) - 1], algo, norelay
    return rest, None, norelay


def static_reference(system):
    """The system a PReCCL leg is compared with: the static policy with the same algorithm."""
    if not system.startswith("preccl-"):
        return "preccl-static"
    algo = preccl_system(system)[1]
    return "preccl-static" + (f"-{algo}" if algo else "")


def system_binary(system, bins):
    """bins: {"preccl": path, "gloo": path, "openmpi": path}."""
    return bins.get(peers.kind(system))


_HELP_CACHE = {}


def supports_iter_csv(binary):
    """An older preccl-perf lacks --iter-csv: the bed then runs without per-iteration rows."""
    if binary not in _HELP_CACHE:
        try:
            p = subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=10)
            _HELP_CACHE[binary] = "--iter-csv" in p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            _HELP_CACHE[binary] = False
    return _HELP_CACHE[binary]


class Ranks:
    def __init__(self, bed, sc, perf_bin, out_dir, system="preccl-static", bins=None):
        self.bed, self.sc, self.out_dir, self.system = bed, sc, out_dir, system
        self.bins = dict(bins or {})
        self.bins.setdefault("preccl", perf_bin)
        self.perf_bin = system_binary(system, self.bins)
        self.nranks = bed.hosts * sc.ranks_per_host
        self.procs = []      # (rank, host, Popen, stdout path, stderr path); OpenMPI: one entry, mpirun
        self.timed_out = False
        self.iter_csv = leg_files.iter_csv(out_dir)
        self.launch_unix = None   # time.time() at the launch: aligns the iteration rows with the events

    def env(self, rank):
        env = dict(os.environ)
        if self.system.startswith("preccl-"):
            env.update(self.sc.env)
            env.update({"PRECCL_RANK": str(rank), "PRECCL_NRANKS": str(self.nranks),
                        "PRECCL_ROOT_ADDR": f"{names.address(0, 0)}:{ROOT_PORT}",
                        "PRECCL_SOCKET_IFNAME": names.NIC_NAME, "PRECCL_TIMEOUT": str(self.sc.timeout),
                        "PRECCL_POLICY": preccl_system(self.system)[0]})
            if preccl_system(self.system)[1]:
                env["PRECCL_ALGO"] = preccl_system(self.system)[1]
            if preccl_system(self.system)[2]:
                env["PRECCL_RELAY"] = "off"
            env.pop("PRECCL_COMM_ID", None)  # preccl-perf derives it from PRECCL_ROOT_ADDR
        if peers.is_torch(self.system):
            backend = peers.torch_backend(self.system)[0]
            if backend == "preccl":
                env.update(self.sc.env)
                env.update({"PRECCL_SOCKET_IFNAME": names.NIC_NAME, "PRECCL_TIMEOUT": str(self.sc.timeout)})
            env.update({"PYTHONPATH": self.bins["torch"], "OMP_NUM_THREADS": "1",
                        "GLOO_SOCKET_IFNAME": ",".join(names.nic(k) for k in range(self.bed.nics))})
            env.pop("PRECCL_COMM_ID", None)
        return env

    def command(self, rank=0):
        """The command of one rank (OpenMPI: the mpirun command line)."""
        if self.system.startswith("preccl-"):
            extra = ["--iter-csv", self.iter_csv] if supports_iter_csv(self.perf_bin) else []
            return [self.perf_bin, *perf_args(self.sc), *extra]
        if peers.kind(self.system) == "gloo":
            ifaces = ",".join(names.nic(k) for k in range(self.bed.nics))
            return [self.perf_bin, *peer_args(self.sc), *peers.gloo_args(self.system), "--rank", str(rank),
                    "--size", str(self.nranks), "--store", leg_files.gloo_store(self.out_dir), "--ifaces", ifaces,
                    "--iter-csv", self.iter_csv]
        if peers.kind(self.system) == "openmpi":
            return self._mpirun()
        if peers.is_torch(self.system):
            backend, ddp = peers.torch_backend(self.system)
            g = self.sc.ranks_per_host
            return [TORCH_PYTHON, TORCHRUN, "--nnodes", str(self.bed.hosts),
                    "--nproc_per_node", str(g), "--node_rank", str(rank // g), "--master_addr", names.address(0, 0),
                    "--master_port", str(TORCH_PORT), TORCH_BENCH, *peer_args(self.sc), "--backend", backend,
                    *(["--ddp"] if ddp else []), "--iter-csv", self.iter_csv]
        raise ValueError(f"unknown system {self.system!r}")

    def _mpirun(self):
        hosts = ",".join(f"{names.netns(self.bed.prefix, h)}:{self.sc.ranks_per_host}"
                         for h in range(self.bed.hosts))
        rails = ",".join(f"{names.address(0, k).rsplit('.', 1)[0]}.0/24" for k in range(self.bed.nics))
        oob = f"{names.address(0, 0).rsplit('.', 1)[0]}.0/24"
        agent = leg_files.rsh_agent(self.out_dir)
        argv = ["mpirun", "--allow-run-as-root", "-np", str(self.nranks), "--host", hosts,
                "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", rails,
                "--mca", "oob_tcp_if_include", oob, "--bind-to", "none",
                # All "hosts" share the machine's cores: a rank that spins while it waits would take
                # the CPU from the kernel that moves the other ranks' packets.
                "--mca", "mpi_yield_when_idle", "1", *peers.mpi_mca(self.system, self.sc.collective),
                self.perf_bin, *peer_args(self.sc), "--iter-csv", self.iter_csv]
        # mpirun itself runs in host 0: give it that host's name, so it launches rank 0 locally.
        ns0 = names.netns(self.bed.prefix, 0)
        return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', ns0, *argv]

    def start(self):
        self.launch_unix = time.time()
        if peers.kind(self.system) == "gloo":  # FileStore keys of an earlier run would be read as addresses
            store = leg_files.gloo_store(self.out_dir)
            shutil.rmtree(store, ignore_errors=True)
            os.makedirs(store)
        if peers.kind(self.system) == "openmpi":  # a private, executable copy (the source tree's mode bits may be lost)
            agent = leg_files.rsh_agent(self.out_dir)
            shutil.copyfile(RSH_AGENT, agent)
            os.chmod(agent, 0o755)
            launches = [(0, 0)]
        elif peers.is_torch(self.system):  # one torchrun per host starts its ranks
            launches = [(h * self.sc.ranks_per_host, h) for h in range(self.bed.hosts)]
        else:
            launches = [(h * self.sc.ranks_per_host + g, h) for h in range(self.bed.hosts)
                        for g in range(self.sc.ranks_per_host)]
        for rank, h in launches:
            out, err = leg_files.rank_logs(self.out_dir, rank, self.system)
            with open(out, "w") as fo, open(err, "w") as fe:
                p = subprocess.Popen(self.bed.exec_argv(h, self.command(rank)), stdout=fo, stderr=fe,
                                     env=self.env(rank), stdin=subprocess.DEVNULL)
            self.procs.append((rank, h, p, out, err))

    def wait(self, timeout):
        """Waits for every rank, at most `timeout` seconds; once one rank failed the others get the
        library's own timeout plus 5 s to notice, then everything left is killed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            codes = [p.poll() for _, _, p, _, _ in self.procs]
            if all(c is not None for c in codes):
                return
            if any(c not in (None, 0) for c in codes):
                deadline = min(deadline, time.monotonic() + self.sc.timeout + 5)
            time.sleep(0.05)
        self.timed_out = True
        self.kill()

    def kill(self):
        live = [p for _, _, p, _, _ in self.procs if p.poll() is None]
        for p in live:
            p.send_signal(signal.SIGTERM)
        t_end = time.monotonic() + 3
        for p in live:
            try:
                p.wait(max(0.01, t_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def summary(self):
        ranks = [{"rank": r, "host": h, "exit": p.returncode, "stdout": os.path.basename(o),
                  "stderr": os.path.basename(e)} for r, h, p, o, e in self.procs]
        rank0 = leg_files.read_rank_output(self.procs[0][3]) if self.procs else ""
        perf = parse_perf(rank0)
        ok = (bool(self.procs) and not self.timed_out and all(r["exit"] == 0 for r in ranks)
              and perf["rows"] != [] and (not self.sc.check or perf["status"] == "OK"))
        return {"ok": ok, "timed_out": self.timed_out, "ranks": ranks, "perf": perf,
                "errors": self._error_lines()}

    def _error_lines(self, per_rank=3):
        """The last lines of every failed rank's stderr: why a run failed, in result.json."""
        out = []
        for r, _, p, _, e in self.procs:
            if p.returncode in (0, None):
                continue
            lines = leg_files.log_lines(e)
            status = f"exit {p.returncode}" if p.returncode >= 0 else f"killed by signal {-p.returncode}"
            out.append(f"rank {r}: {status}" + "".join(f" | {l[:300]}" for l in lines[-per_rank:]))
        return out


_ROW_NUM = re.compile(r"^-?\d+(\.\d+)?$")


def parse_perf(text):
    """Rows of preccl-perf's table (nccl-tests columns) and its footer."""
    rows, status, wrong, avg = [], None, None, None
    for line in text.splitlines():
        m = re.match(r"#\s*Out of bounds values\s*:\s*(\d+)\s+(\w+)", line)
        if m:
            wrong, status = int(m.group(1)), m.group(2)
        m = re.match(r"#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)", line)
        if m:
            avg = float(m.group(1))
        f = line.split()
        if line.startswith("#") or len(f) != 13 or not f[0].isdigit():
            continue
        num = lambda s: None if s == "N/A" else float(s)
        rows.append({"size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4]),
                     "oop": {"time_us": num(f[5]), "algbw": num(f[6]), "busbw": num(f[7]), "wrong": f[8]},
                     "ip": {"time_us": num(f[9]), "algbw": num(f[10]), "busbw": num(f[11]), "wrong": f[12]}})
    return {"rows": rows, "wrong": wrong, "status": status, "avg_busbw": avg}
