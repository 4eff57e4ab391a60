#!/bin/bash
# PReCCL's libnccl.so.2 exports exactly NCCL's API: every function its nccl.h declares (nccl<Name> weak,
# pnccl<Name> global, as in NCCL's library) and nothing else. Where NVIDIA's nccl.h and libnccl.so.2 are
# installed, the set must equal the functions that header declares, and NVIDIA's library must export each
# of them with the same binding.
# Usage: check_exports.sh <our libnccl.so.2> <our nccl.h dir> [NVIDIA nccl.h dir] [NVIDIA libnccl.so.2]
set -euo pipefail
ours=$1 ourInc=$2 nvInc=${3:-} nvLib=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Function names a header declares, after the preprocessor (our header declares through a macro).
declared() {  # <include dir> [more -I dirs]
  local inc=$1; shift
  echo '#include <nccl.h>' | cc -E -P -I"$inc" "$@" -x c - | grep -oE '\bp?nccl[A-Z][A-Za-z0-9]*[[:space:]]*\(' |
    tr -d '( \t' | sort -u
}
# "binding name" for every defined dynamic symbol named nccl*/pnccl*, and everything else apart.
exported() { nm -D --defined-only "$1" | awk '{print $2, $3}' | sort -k2; }

exported "$ours" > "$tmp/ours.all"
awk '{print $2}' "$tmp/ours.all" | sort -u > "$tmp/ours.names"
declared "$ourInc" > "$tmp/header.names"
n=$(wc -l < "$tmp/header.names")
echo "our nccl.h declares $n functions; libnccl.so.2 exports $(wc -l < "$tmp/ours.names") symbols"
if ! diff "$tmp/header.names" "$tmp/ours.names" > "$tmp/d1"; then
  echo "FAILED: exports differ from our nccl.h (< header only, > library only):"; cat "$tmp/d1"; fail=1
fi
[ "$n" -eq 82 ] || { echo "FAILED: expected NCCL 2.28's 41 functions under two names each, got $n"; fail=1; }
# nccl<Name> weak (W), pnccl<Name> global (T).
if awk '($2 ~ /^nccl/ && $1 != "W") || ($2 ~ /^pnccl/ && $1 != "T")' "$tmp/ours.all" | grep .; then
  echo "FAILED: the bindings above are not NCCL's (nccl* weak, pnccl* global)"; fail=1
fi

if [ -n "$nvInc" ] && [ -f "$nvInc/nccl.h" ]; then
  declared "$nvInc" -I/usr/local/cuda/include > "$tmp/nv.names"
  if diff "$tmp/nv.names" "$tmp/ours.names" > "$tmp/d2"; then
    echo "equal to the $(wc -l < "$tmp/nv.names") functions of NVIDIA's $nvInc/nccl.h"
  else
    echo "FAILED: exports differ from NVIDIA's nccl.h (< NVIDIA only, > ours only):"; cat "$tmp/d2"; fail=1
  fi
else
  echo "skipped: no NVIDIA nccl.h to compare with"
fi
if [ -n "$nvLib" ] && [ -f "$nvLib" ]; then
  exported "$nvLib" > "$tmp/nv.all"
  # Each of ours with the same binding there (NVIDIA's also exports its device API, which nccl.h lacks).
  missing=$(join -1 2 -2 2 -a 1 -e NONE -o 0,1.1,2.1 "$tmp/ours.all" "$tmp/nv.all" | awk '$2 != $3')
  if [ -n "$missing" ]; then
    echo "FAILED: not exported alike by NVIDIA's $nvLib (name, ours, NVIDIA's):"; echo "$missing"; fail=1
  else
    echo "NVIDIA's $nvLib exports every one of them with the same binding"
  fi
else
  echo "skipped: no NVIDIA libnccl.so.2 to compare with"
fi
exit $fail
