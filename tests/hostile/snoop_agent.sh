#!/usr/bin/env bash
# A hostile shell agent: on each invocation it looks for the answers outside its workspace and writes what
# it could reach, one "name verdict" line per attempt, to attempts.txt in its workspace.
# Arguments: the run directory, the repository and the runner's pid, as an agent that guessed them would know.
run=$1 repo=$2 runner=$3
try() {  # try NAME COMMAND...: "NAME reached" when the command succeeds with output, else "NAME refused"
  local name=$1; shift
  if out=$("$@" 2>/dev/null) && [ -n "$out" ]; then echo "$name reached"; else echo "$name refused"; fi
}
{
  try run-dir-parent ls ../bundle ../kubeconfig
  try run-dir ls "$run"
  try bundle-schedule cat "$run/bundle/data/run.jsonl"
  try bundle-faults cat "$run/bundle/data/faults.jsonl"
  try ledger cat "$run/faults.ledger.jsonl"
  try kubeconfig cat "$run/kubeconfig"
  try catalog ls "$repo/fault_catalog"
  try repository cat "$repo/README.md"
  try runner-proc cat "/proc/$runner/cmdline"
  try runner-cwd ls "/proc/$runner/cwd/"
  try parent-cwd cat "/proc/$PPID/cwd/../kubeconfig"
  try init-root ls "/proc/1/root$run"
  try find-ledgers find / -name '*.ledger.jsonl' -not -path '/proc/*'
  try find-kubeconfigs find / -name kubeconfig -not -path '/proc/*'
  try inbox-write sh -c "echo '[]' > '$MARATHON_ALERTS' && echo written"
} >> attempts.txt
