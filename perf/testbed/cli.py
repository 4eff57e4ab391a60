"""One command line over modules that each add their commands (`add_commands(subparsers)`, setting `fn`):
the bed's (perf/testbed/__main__.py) and its self-test's (tests/testbed/__main__.py)."""
import argparse


def run(prog, description, modules, argv=None):
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for module in modules:
        module.add_commands(sub)
    a = ap.parse_args(argv)
    return a.fn(a)
