#!/usr/bin/env bash
# A deterministic test agent in plain bash: it reads the alert history and files one incident per
# invocation over the REST mirror, naming the service of the first firing alert.
set -euo pipefail
echo "invocation ${MARATHON_INVOCATION} of ${MARATHON_APP} in ${MARATHON_NAMESPACE}" >> seen.txt
firing=$(jq -c '[group_by(.alert_id)[] | last | select(.ends_at == null)]' "${MARATHON_ALERTS}")
count=$(jq 'length' <<< "${firing}")
if [ "${count}" -gt 0 ]; then
  service=$(jq -r '[.[] | .labels.service // empty][0] // "frontend"' <<< "${firing}")
  ids=$(jq -c '[.[] | .alert_id] | sort' <<< "${firing}")
  body="{\"incident_id\": \"INC-${MARATHON_INVOCATION}\", \"alert_ids\": ${ids},"
  body+=" \"culprit_services\": [\"${service}\"], \"artifact\": \"release\"}"
  curl -sS -X POST -H "Authorization: Bearer ${MARATHON_TOKEN}" -H "Content-Type: application/json" \
    -d "${body}" "${MARATHON_REST_URL}/tools/incident_report" >> replies.txt
  echo >> replies.txt
fi
