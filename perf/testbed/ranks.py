"""Starts the PReCCL ranks of a run: ranks_per_host processes in every host namespace, joined through
the environment (PRECCL_RANK / PRECCL_NRANKS / PRECCL_ROOT_ADDR), rank 0 hosting the bootstrap root
on its rail-0 address."""
import os
import re
import signal
import subprocess
import time

import bed_names as names

ROOT_PORT = 29500


def perf_args(sc):
    return ["-t", sc.collective, "-b", str(sc.min_bytes), "-e", str(sc.max_bytes), "-n", str(sc.iters),
            "-w", str(sc.warmup), "-c", "1" if sc.check else "0", "-d", sc.dtype, "-o", sc.op]


class Ranks:
    def __init__(self, bed, sc, perf_bin, out_dir):
        self.bed, self.sc, self.perf_bin, self.out_dir = bed, sc, perf_bin, out_dir
        self.nranks = bed.hosts * sc.ranks_per_host
        self.procs = []      # (rank, host, Popen, stdout path, stderr path)
        self.timed_out = False

    def env(self, rank):
        env = dict(os.environ)
        env.update(self.sc.env)
        env.update({"PRECCL_RANK": str(rank), "PRECCL_NRANKS": str(self.nranks),
                    "PRECCL_ROOT_ADDR": f"{names.address(0, 0)}:{ROOT_PORT}",
                    "PRECCL_SOCKET_IFNAME": names.NIC_NAME, "PRECCL_TIMEOUT": str(self.sc.timeout)})
        env.pop("PRECCL_COMM_ID", None)  # preccl-perf derives it from PRECCL_ROOT_ADDR
        return env

    def command(self):
        return [self.perf_bin, *perf_args(self.sc)]

    def start(self):
        for h in range(self.bed.hosts):
            for g in range(self.sc.ranks_per_host):
                rank = h * self.sc.ranks_per_host + g
                out = os.path.join(self.out_dir, f"rank{rank}.out")
                err = os.path.join(self.out_dir, f"rank{rank}.err")
                with open(out, "w") as fo, open(err, "w") as fe:
                    p = subprocess.Popen(self.bed.exec_argv(h, self.command()), stdout=fo, stderr=fe,
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
        rank0 = open(self.procs[0][3]).read() if self.procs else ""
        perf = parse_perf(rank0)
        ok = (bool(self.procs) and not self.timed_out and all(r["exit"] == 0 for r in ranks)
              and perf["rows"] != [] and (not self.sc.check or perf["status"] == "OK"))
        return {"ok": ok, "timed_out": self.timed_out, "ranks": ranks, "perf": perf}


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
