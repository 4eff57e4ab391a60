"""Whole-machine CPU use between two reads of /proc/stat: the bed shares 2 cores with everything else,
so a run that saturated the CPU measured the CPU, not the network."""
BUSY_WARN = 0.85


def read():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return {"total": sum(fields[:8]), "idle": idle}          # guest time is already inside user


def busy(before, after):
    total = after["total"] - before["total"]
    return 0.0 if total <= 0 else 1.0 - (after["idle"] - before["idle"]) / total
