"""PReCCL multi-host, multi-NIC test bed: H hosts x K NICs as network namespaces (see docs/testbed.md).

  python3 perf/testbed up | down | run | report | check-scenario ...   the bed (bed_commands)
  python3 perf/testbed nic-use OUT_DIR ...                           every call's NIC use per NIC
  python3 perf/testbed bytes-where OUT_DIR ...                       what each NIC sent, what was relayed
  python3 perf/testbed stability OUT_DIR ...                         PReCCL's shares and reactions
  python3 perf/testbed results-table LABEL=OUT_DIR ...               several runs, one markdown table
  python3 perf/testbed tcp-flows sample | table ...                  per-TCP-flow rates from `ss`
  python3 perf/testbed selftest --perf BIN                           the CI test (ctest testbed)
  python3 perf/testbed selftest-parse | selftest-capacity            its checks that need no root

Running the directory puts it first on the module search path: the modules import each other by plain name.
blaster.py is not a command but a program of its own, which the bed starts inside its namespaces.
"""
import argparse
import sys

sys.dont_write_bytecode = True  # keep the source tree clean (no __pycache__)

import bed_commands  # noqa: E402
import bytes_where  # noqa: E402
import nic_use  # noqa: E402
import results_table  # noqa: E402
import selftest  # noqa: E402
import selftest_capacity  # noqa: E402
import selftest_parse  # noqa: E402
import stability  # noqa: E402
import tcp_flows  # noqa: E402

COMMANDS = (bed_commands, bytes_where, nic_use, stability, results_table, tcp_flows, selftest, selftest_parse,
            selftest_capacity)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=f"python3 {sys.argv[0]}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_commands(sub)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
