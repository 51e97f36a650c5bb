#!/usr/bin/env bash
# A hostile test agent: at every invocation it sends the tool server what could stall it or slip past it
# (a backtracking grep, 100,000-deep JSON on both faces, a 2 MB report field, an unknown tool, a body that is
# not JSON), then one ordinary read; it writes "<invocation> <call> <HTTP status>" lines to statuses.txt.
set -uo pipefail
auth="Authorization: Bearer ${MARATHON_TOKEN}"
scratch=$(mktemp -d)
printf '%*s' 100000 '' | tr ' ' '[' > "${scratch}/deep.json"
printf '%*s' 100000 '' | tr ' ' ']' >> "${scratch}/deep.json"
huge=$(head -c 2000000 /dev/zero | tr '\0' x)
printf '{"incident_id": "INC-1", "artifact": "pod", "notes": "%s"}' "${huge}" > "${scratch}/report.json"
printf '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "incident_report", "arguments": %s}}' \
  "$(cat "${scratch}/report.json")" > "${scratch}/report-rpc.json"
send() {  # send NAME URL FILE-OR-TEXT
  local body=$3
  [ -f "$3" ] && body="@$3"
  code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 -X POST -H "${auth}" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data-binary "${body}" "$2")
  echo "${MARATHON_INVOCATION} $1 ${code}" >> statuses.txt
}
send grep "${MARATHON_REST_URL}/tools/get_logs" '{"service": "cartservice", "grep": "(.|.)*\\x00"}'
send rest-deep "${MARATHON_REST_URL}/tools/get_alerts" "${scratch}/deep.json"
send mcp-deep "${MARATHON_MCP_URL}" "${scratch}/deep.json"
send rest-huge "${MARATHON_REST_URL}/tools/incident_report" "${scratch}/report.json"
send mcp-huge "${MARATHON_MCP_URL}" "${scratch}/report-rpc.json"
send unknown "${MARATHON_REST_URL}/tools/kubectl_exec" '{"command": "id"}'
send not-json "${MARATHON_MCP_URL}" '{"jsonrpc": "2.0", '
send alerts "${MARATHON_REST_URL}/tools/get_alerts" '{"status": "firing"}'
rm -rf "${scratch}"
