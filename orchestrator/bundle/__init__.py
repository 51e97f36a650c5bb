"""The run bundle: typed journal records, hash-chained streams, BagIt sealing and verification.

A live run writes through ``Journal(directory, run_id=...)``: ``append(record)`` picks the stream from the
record's kind (``records.STREAM_OF_KIND``), ``write_runtime(facts)`` replaces the one wall-clock file.
A sealed bundle looks like this::

    bagit.txt  bag-info.txt  manifest-sha256.txt  tagmanifest-sha256.txt
    chain-heads.json: records and last line hash per stream, covered by the tag manifest
    signature-ed25519.pub: only when signed; covered by the tag manifest
    tagmanifest-sha256.txt.sig: only when signed; base64 Ed25519 signature of the tag manifest
    data/run.jsonl: run_manifest (first line), schedule, run_ended
    data/faults.jsonl: fault_injected, fault_reverted, fault_failed
    data/alerts.jsonl: alert (a new line per state change)
    data/rules.jsonl: rule_failed (per failed evaluation window), rule_health (per rule, at the run's end)
    data/probes.jsonl: probe_sample, artifact_sample
    data/service.jsonl: service_sample
    data/agent.jsonl: invocation, tool_call, incident_report, intervention, forbidden_attempt
    data/metering.jsonl: model_call
    data/state.jsonl: service_states (every workload of the namespace, at the run's start and at its end)
    data/runtime.json: wall-clock facts; the only file that differs between equal runs

Every stream line is canonical JSON (sorted keys, no spaces) with ``prev``, the SHA-256 of the previous line
of the stream (the first line chains to SHA-256 of the run id).
"""
