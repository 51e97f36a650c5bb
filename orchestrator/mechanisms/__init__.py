"""Fault mechanisms: how a catalog entry of each mechanism is put into a cluster and taken out again.

One module per mechanism (``code``, ``config``, ``chaos``), each one object that plans a revert handle,
applies it, reverts it, tells whether its artifact is restored, and describes the Chaos Toolkit steps that
the injector runs and ``marathon catalog export-ctk`` writes out. ``registry`` maps the catalog's
``mechanism`` field to that object. ``applying`` carries injections and reverts out with the revert
``ledger`` written first, and ``commands`` is ``marathon recover``, which reverts from that ledger.
"""
