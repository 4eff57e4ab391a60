"""The self-test of the test bed (perf.testbed, docs/testbed.md). From the repository root:

  python3 -m tests.testbed selftest --perf BIN                    the CI test (ctest testbed)
  python3 -m tests.testbed selftest-parse | selftest-capacity     its checks that need no root
"""
import argparse
import sys

from . import selftest
from . import selftest_capacity
from . import selftest_parse

COMMANDS = (selftest, selftest_parse, selftest_capacity)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tests.testbed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_commands(sub)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
