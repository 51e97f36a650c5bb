"""The marathon runner: the boundary loop, agent invocation and workspaces.

``runner.run_marathon(config, *, events=None, stop=None) -> RunResult`` runs one marathon end to end,
reporting its live events (``events.py``) to a handler as it goes; ``config.RunConfig`` (built with
``config.make_config``) says what to run. A run directory holds
``bundle/`` (the journal, sealed into a BagIt bag at the end), ``workspace/`` (the agent's working
directory; ``workspace/inbox/alerts.json`` is the cumulative alert history), ``prometheus/`` (the run's
TSDB), ``faults.ledger.jsonl`` (the revert ledger for ``marathon recover``), ``logs/agent.log``,
``kubeconfig`` (the twin's), ``score.json`` and ``score.txt``. No-action baselines are cached under
``<runs>/.baselines/``.
"""
