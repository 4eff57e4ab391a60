#!/bin/sh
# OpenMPI's "remote shell" inside the test bed (mpirun --mca plm_rsh_agent <this>): the host names are the
# bed's namespace names, and "logging in" to one is entering that namespace with a UTS namespace of its
# own whose hostname is the namespace's name (so every rank sees a different host). Like ssh, the rest of
# the arguments are one command line for a shell.
while [ $# -gt 0 ]; do            # options an rsh-style caller may put before the host name
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"
shift
case "$host" in
  *[!a-z0-9]*|'') echo "mpi_rsh_agent: bad host name '$host'" >&2; exit 2 ;;
esac
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
