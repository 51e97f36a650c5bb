"""The control plane: FastAPI app, dashboard and nightly benchmark jobs.

``marathon serve`` runs ``app.create_app``: each run in a spawned worker process (``workers``) driving
``orchestrator.run.runner.run_marathon``; its events come back over a pipe into ``runs.RunManager``, which
keeps the SQLAlchemy run registry (``registry``), the operator metrics (``metrics``) and each run's event
log (``<data>/runs/<id>/events.jsonl``) current. A run's home is ``<data>/runs/<id>/``; the runner's run
directory is its ``run/`` (bundle, revert ledger ``faults.ledger.jsonl``, score). At start-up, runs a dead
server left active are marked ``interrupted`` and their ledgers settled (``recovery``). ``nightly`` runs the
apps x agents x seeds matrix of ``deploy/nightly.yaml`` on an APScheduler cron trigger, or at once with
``marathon nightly --once``.
"""
