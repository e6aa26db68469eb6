#!/usr/bin/env bash
# The gnnpipe program as a process: exit codes and output of the built binary.
# Usage: cli_exit_codes.sh PATH/TO/gnnpipe
set -u
bin=$1
fails=0
expect() {  # expect CODE DESCRIPTION -- ARGS...
  local want=$1 what=$2; shift 3
  "$bin" "$@" >/tmp/gnnpipe_cli_out.$$ 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: 'gnnpipe $*' exited $got, expected $want"; cat /tmp/gnnpipe_cli_out.$$; fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
expect 0 "version" -- --version
expect 0 "help" -- --help
expect 2 "no subcommand" --
expect 2 "unknown option" -- --frobnicate
expect 2 "run before training lands" -- run configs/quickstart.yaml
expect 0 "doctor on the CPU" -- doctor --device cpu --bytes 1MiB --repeats 1
"$bin" --version | head -1 | grep -q '^gnnpipe [0-9]' || { echo "FAIL: --version first line"; fails=$((fails + 1)); }
rm -f /tmp/gnnpipe_cli_out.$$
[ "$fails" -eq 0 ]
