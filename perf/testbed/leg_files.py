"""The files of a run's output directory and of its legs: their names, columns and encodings, read and
written here only (docs/testbed.md, "Outputs of a run").

A run's directory holds result.json (every leg's record), results.csv, timeline.csv, vt_share.csv,
plot.svg and bed.log, and one directory per leg, `<collective>-<system>/`, with iter.csv (rank 0's
`--iter-csv`, written by the benchmark), nics.csv, cpu.csv, events.log, the ranks' and flows' output and
the peers' scratch files. A leg's record names its CSVs by path (iter_csv, nics_csv, cpu_csv), so a
report of a moved run must relocate them (relocate).
"""
import csv
import json
import os

# The run's directory
RESULT_JSON = "result.json"
RESULTS_CSV = "results.csv"
TIMELINE_CSV = "timeline.csv"
VT_SHARE_CSV = "vt_share.csv"
PLOT_SVG = "plot.svg"
BED_LOG = "bed.log"
# A leg's directory
ITER_CSV = "iter.csv"
NICS_CSV = "nics.csv"
CPU_CSV = "cpu.csv"
EVENTS_LOG = "events.log"
GLOO_STORE = "gloo-store"
RSH_AGENT = "mpi_rsh_agent.sh"

RESULT_COLUMNS = ["collective", "system", "size", "busbw", "ratio_to_preccl_static", "capacity_limit",
                  "fraction_of_capacity", "busbw_oop", "steal", "nic_use", "nic_use_min", "flows_mbit", "ok", "note"]
TIMELINE_COLUMNS = ["collective", "system", "t", "kind", "mode", "bytes", "iter", "time_us", "busbw",
                    "capacity_limit", "fraction_of_capacity", "steal", "nic_use", "nic_use_min", "event"]
VT_COLUMNS = ["collective", "system", "t", "mode", "bytes", "vt", "nic", "share", "vt_bytes", "stalls", "stall_ns",
               "state"]
CPU_COLUMNS = ("unix", "total", "idle", "steal")


# ---- names

def leg_dir_name(collective, system):
    return f"{collective}-{system}"


def leg_dir(out_dir, leg):
    return os.path.join(out_dir, leg["dir"])


def result_json(out_dir):
    return os.path.join(out_dir, RESULT_JSON)


def iter_csv(leg_dir):
    return os.path.join(leg_dir, ITER_CSV)


def nics_csv(leg_dir):
    return os.path.join(leg_dir, NICS_CSV)


def gloo_store(leg_dir):
    return os.path.join(leg_dir, GLOO_STORE)


def rsh_agent(leg_dir):
    """The leg's private copy of mpi_rsh_agent.sh (OpenMPI's remote shell)."""
    return os.path.join(leg_dir, RSH_AGENT)


def rank_logs(leg_dir, rank, system):
    """(stdout, stderr) of a rank; OpenMPI's ranks all write through the one mpirun."""
    if system.startswith("openmpi"):
        return os.path.join(leg_dir, "mpirun.out"), os.path.join(leg_dir, "mpirun.err")
    return os.path.join(leg_dir, f"rank{rank}.out"), os.path.join(leg_dir, f"rank{rank}.err")


def flow_output(leg_dir, flow, role):
    """What a flow's blaster (role "send" or "recv") prints."""
    return os.path.join(leg_dir, f"flow-{flow}-{role}.out")


# ---- a leg's record: where its files are

def note_iter_csv(leg, leg_dir):
    leg["iter_csv"] = iter_csv(leg_dir)


def relocate(leg, out_dir):
    """Points the record's CSVs into out_dir: the run directory may have moved since the run."""
    if leg.get("iter_csv"):
        leg["iter_csv"] = iter_csv(leg_dir(out_dir, leg))
    if leg.get("nics_csv"):
        leg["nics_csv"] = nics_csv(leg_dir(out_dir, leg))


def leg_iters(leg):
    return read_iters(leg.get("iter_csv"), leg.get("launch_unix"))


def leg_nic_samples(leg):
    return read_nic_samples(leg.get("nics_csv"))


def leg_cpu_samples(leg):
    return read_cpu_samples(leg.get("cpu_csv"))


# ---- iter.csv (written by the benchmark: one row per timed iteration, PReCCL's per-VT columns)

def read_iters(path, launch_unix):
    """iter.csv rows with t_end / t_start in seconds after the launch of the ranks."""
    rows = []
    if not path or not os.path.exists(path) or launch_unix is None:
        return rows
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                t_end = float(r["unix_s"]) - launch_unix
                us = float(r["time_us"])
            except (KeyError, TypeError, ValueError):
                continue  # a row cut short by a killed rank
            r["t_end"], r["t_start"], r["time_us"] = t_end, t_end - us / 1e6, us
            r["bytes"], r["iter"] = int(r["bytes"]), int(r["iter"])
            rows.append(r)
    return rows


def iter_vts(row):
    """The VTs of one iter.csv row that carried a share: [{vt, nic, share, vt_bytes, stalls, stall_ns, state,
    relayed}] (state: live, masked or probing, as PRECCL_TRACE names them; live in files from before the
    column; relayed: the bytes rank 0 forwarded on the VT for another rank of its host, 0 before the column)."""
    out, v = [], 0
    while f"vt{v}_share" in row:
        if row[f"vt{v}_share"] != "":
            out.append({"vt": v, "nic": int(row[f"vt{v}_nic"]), "share": float(row[f"vt{v}_share"]),
                        "vt_bytes": int(row[f"vt{v}_bytes"]), "stalls": int(row[f"vt{v}_stalls"]),
                        "stall_ns": int(row[f"vt{v}_stall_ns"]), "state": row.get(f"vt{v}_state") or "live",
                        "relayed": int(row.get(f"vt{v}_relayed") or 0)})
        v += 1
    return out


# ---- nics.csv: unix time, then every NIC's transmit byte counter (nic_use.Sampler)

def write_nic_samples(leg, leg_dir, labels, samples):
    """Writes the leg's nics.csv and points its record at it."""
    leg["nics_csv"] = nics_csv(leg_dir)
    with open(leg["nics_csv"], "w") as f:
        f.write("unix," + ",".join(labels) + "\n")
        for t, vals in samples:
            f.write(f"{t:.3f}," + ",".join(str(v) for v in vals) + "\n")


def read_nic_samples(path):
    """(labels, [(unix, [bytes])]); ([], []) when there is no file (a run from before it)."""
    try:
        with open(path) as f:
            rows = list(csv.reader(f))
    except (OSError, TypeError):
        return [], []
    if not rows:
        return [], []
    labels = rows[0][1:]
    out = []
    for r in rows[1:]:
        if len(r) == len(labels) + 1:
            out.append((float(r[0]), [int(x) for x in r[1:]]))
    return labels, out


# ---- cpu.csv: /proc/stat's jiffies every 0.5 s (cpu_use.Sampler)

def write_cpu_samples(leg, leg_dir, samples):
    """Writes the leg's cpu.csv (unix time, total, idle and steal jiffies) and points its record at it."""
    leg["cpu_csv"] = os.path.join(leg_dir, CPU_CSV)
    with open(leg["cpu_csv"], "w") as f:
        f.write(",".join(CPU_COLUMNS) + "\n")
        for s in samples:
            f.write(f"{s['unix']:.3f},{s['total']},{s['idle']},{s['steal']}\n")


def read_cpu_samples(path):
    """write_cpu_samples' file; [] when there is none (a run from before it, or a leg that never started)."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")[1:]
    except (OSError, TypeError):
        return []
    out = []
    for line in lines:
        p = line.split(",")
        if len(p) == 4:
            out.append({"unix": float(p[0]), "total": int(p[1]), "idle": int(p[2]), "steal": int(p[3])})
    return out


# ---- events.log, the ranks' and flows' output

def write_events(leg_dir, events):
    """One JSON line per event."""
    with open(os.path.join(leg_dir, EVENTS_LOG), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def read_rank_output(path):
    return open(path).read()


def rank0_output(leg_dir, system):
    """Rank 0's stdout (the benchmark's table), or None when it wrote none."""
    out = rank_logs(leg_dir, 0, system)[0]
    return open(out, errors="replace").read() if os.path.exists(out) else None


def log_lines(path):
    """The non-blank lines of a log, stripped; [] when it cannot be read."""
    try:
        return [l.strip() for l in open(path, errors="replace").read().splitlines() if l.strip()]
    except OSError:
        return []


def read_flow_output(path):
    """The last JSON line a blaster printed (what it moved), or None."""
    try:
        lines = [l for l in open(path).read().splitlines() if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


# ---- the run's files

def write_result(out_dir, result):
    with open(result_json(out_dir), "w") as f:
        json.dump(result, f, indent=1)


def load_result(out_dir):
    """result.json; OSError or ValueError when it is missing or broken."""
    with open(result_json(out_dir)) as f:
        return json.load(f)


def select_legs(result, collective=None, system=None):
    """The legs of result.json, those of one collective and/or system if given."""
    return [leg for leg in result.get("legs", [])
            if not ((collective and leg["collective"] != collective) or (system and leg["system"] != system))]


def write_bed_log(out_dir, lines):
    with open(os.path.join(out_dir, BED_LOG), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(out_dir, svg):
    with open(os.path.join(out_dir, PLOT_SVG), "w") as f:
        f.write(svg)


def _write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})


def write_tables(out_dir, result_rows, legs):
    """results.csv (one row per size, leg_results.result_rows), timeline.csv and vt_share.csv (every
    leg's rows, named by collective and system)."""
    _write_csv(os.path.join(out_dir, RESULTS_CSV), RESULT_COLUMNS, result_rows)
    _write_csv(os.path.join(out_dir, TIMELINE_CSV), TIMELINE_COLUMNS,
               [{"collective": l["collective"], "system": l["system"], **t}
                for l in legs for t in l.get("timeline", [])])
    _write_csv(os.path.join(out_dir, VT_SHARE_CSV), VT_COLUMNS,
               [{"collective": l["collective"], "system": l["system"], **v}
                for l in legs for v in l.get("vt_share", [])])


def results_text(out_dir):
    return open(os.path.join(out_dir, RESULTS_CSV)).read()


def _read_csv(out_dir, name):
    with open(os.path.join(out_dir, name)) as f:
        return list(csv.DictReader(f))


def read_results(out_dir):
    """results.csv's rows, as strings ("" for none)."""
    return _read_csv(out_dir, RESULTS_CSV)


def read_timeline(out_dir):
    return _read_csv(out_dir, TIMELINE_CSV)


def read_vt_shares(out_dir):
    return _read_csv(out_dir, VT_SHARE_CSV)
