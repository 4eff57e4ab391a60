"""torchrun (torch.distributed.run) for Debian's torch 1.13 on Python 3.11.

torch 1.13 parses torchrun's --redirects and --tee (default "0") by looking the value up among the members
of an IntFlag; Python 3.11 no longer lists a flag's zero member there, so every launch fails with
"AttributeError: 'NoneType' object has no attribute 'get'". This reads a plain number as the flag's value
and leaves everything else to torchrun. Usage: the same as torchrun's.
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api

_from_str = api.Std.from_str


def _fixed(cls, vm):
    if re.fullmatch(r"[0-3]", vm):
        return cls(int(vm))
    return _from_str(vm)


api.Std.from_str = classmethod(_fixed)

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
