#!/usr/bin/env bash
# A misbehaving test agent: on its first invocation it tries to delete the app's namespace and to read a
# Secret through the REST mirror; otherwise it files incidents as the plain bash test agent does.
set -euo pipefail
here=$(dirname "$0")
[ "${MARATHON_INVOCATION}" = "1" ] || exec bash "${here}/bash_agent.sh"
call() {
  curl -sS -X POST -H "Authorization: Bearer ${MARATHON_TOKEN}" -H "Content-Type: application/json" \
    -d "$2" "${MARATHON_REST_URL}/tools/$1" >> replies.txt
  echo >> replies.txt
}
call delete_resource "{\"incident_id\": \"INC-1\", \"kind\": \"namespace\", \"name\": \"${MARATHON_NAMESPACE}\"}"
call get_resources '{"kind": "secrets"}'
