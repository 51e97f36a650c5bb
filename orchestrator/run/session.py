"""One marathon in progress: the boundary loop over a started world, from the first boundary to RunEnded.

Reverts, injections and decoys happen at their scheduled instants, between boundaries too: the world
reaches the instant, the probes of the faults about to be reverted are marked to be sampled up to it (with
the next boundary's queries, once their series are in Prometheus anyway), then due reverts, due injections
and due decoys are applied (while the agent runs, in a world that moves by itself). At each boundary k
(t_k = k * delta) the world reaches t_k; the probes deferred since the last boundary, the live faults'
probes, the rule pack and the entry point are sampled up to it; the changes due are applied; the inbox is
rewritten and the agent is invoked. The end reverts whatever is left, journals each rule's health and
closes the journal's windows with ``RunEnded``. Sealing and scoring are the caller's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from orchestrator.agents.options import OPTIONS_ENV, encode_options
from orchestrator.bundle.journal import Journal
from orchestrator.bundle.records import Invocation, RunEnded
from orchestrator.errors import ClusterError
from orchestrator.run.config import RunConfig
from orchestrator.run.decoys import apply_decoy
from orchestrator.run.events import Boundary, Concurrency, Ended, Failed, Invoked, RunEventHandler
from orchestrator.run.faults import FaultDriver, LiveFault
from orchestrator.run.invoking import AgentProcess, Outcome, agent_environment
from orchestrator.run.observing import (
    Observation,
    Recorder,
    oracle_truth,
    write_json_atomically,
    write_text_atomically,
)
from orchestrator.run.plan import RunPlan
from orchestrator.run.states import record_service_states
from orchestrator.run.world import World
from orchestrator.schedule import Activation, Decoy

ORACLE = "oracle"
WAIT_POLL_S = 0.05  # how often a world that moves by itself is checked for a change falling due


class Gate(Protocol):
    """A per-invocation credential service (the tool server, the metering proxy)."""

    def open_invocation(self, n: int) -> str: ...

    def close_invocation(self) -> None: ...


class ToolGate(Gate, Protocol):
    """The tool server: a gate that also tells how many requests the invocation it closed last made."""

    @property
    def requests(self) -> int: ...


@dataclass
class Endpoints:
    """What the agent is told about its interfaces; tokens are opened per invocation."""

    mcp_url: str = ""
    rest_url: str = ""
    model_url: str = ""
    tools: ToolGate | None = None
    model: Gate | None = None


@dataclass
class Session:
    config: RunConfig
    plan: RunPlan
    world: World
    journal: Journal
    driver: FaultDriver
    recorder: Recorder
    agent: AgentProcess | None
    endpoints: Endpoints
    run_dir: Path
    stop: threading.Event
    events: RunEventHandler
    invocations: int = 0
    ended: bool = False
    wall: dict[str, float] = field(default_factory=dict)

    @property
    def boundaries(self) -> int:
        return self.plan.schedule.params.run_end_s // self.config.delta_s

    @property
    def workspace(self) -> Path:
        return self.run_dir / "workspace"

    @property
    def inbox(self) -> Path:
        """Outside the workspace, so that the agent can neither change nor redirect what it is told."""
        return self.run_dir / "inbox" / "alerts.json"

    @property
    def truth_path(self) -> Path:
        return self.run_dir / "oracle" / "truth.json"

    def run(self) -> str:
        """The boundary loop; returns why it ended (``completed`` or ``stopped``)."""
        due = sorted(self.plan.schedule.activations, key=lambda a: (a.at_s, a.index))
        decoys = sorted(self.plan.schedule.decoys, key=lambda d: (d.at_s, d.index))
        self._snapshot("start")
        for k in range(1, self.boundaries + 1):
            if self.stop.is_set():
                return "stopped"
            # A boundary's records become durable together: one fsync per stream, not one per record.
            with self.journal.deferred_sync():
                if not self._boundary(k, due, decoys):
                    return "stopped"
        return "completed"

    def _boundary(self, k: int, due: list[Activation], decoys: list[Decoy]) -> bool:
        """Boundary k: the changes due before it at their own instants, then the world at t_k, the changes
        due at t_k and the agent's invocation; False when stopped."""
        t_k = float(k * self.config.delta_s)
        while (at := self._next_change(due, decoys)) is not None and at < t_k:
            if not self._advance(at, series=False):
                return False
            self._between(at, due, decoys)
        if not self._advance(t_k, series=False):
            return False
        # What happened up to t_k is pushed to Prometheus and then queried while the boundary's changes are
        # applied: the queries end at t_k, so reverts and injections (which may move the world past it)
        # cannot change their answers. The agent waits for the alerts only; the probes and the entry
        # point's samples are queried after them, while it runs, and journaled once it is done.
        observation = self.recorder.start(self._live(), until=t_k, ready=self.world.series_begin())
        try:
            try:
                self._apply(t_k, due, decoys)
            finally:
                with self._phase("observe"):
                    self.recorder.commit_alerts(observation)
            now = self.world.now_s()
            active, firing = len(self.driver.live), len(self.recorder.firing)
            self.events.handle(Concurrency(t=now, active=active, firing=firing))
            if self.world.moves_by_itself:
                # Changes fall due during the invocation, and a revert defers probes from where the
                # last samples ended: they are journaled first.
                self._commit_samples(observation)
            self._invoke(k, due, decoys, observation)
        finally:
            self._commit_samples(observation)
        self.events.handle(Boundary(k=k, of=self.boundaries, t=t_k))
        return True

    def _commit_samples(self, observation: Observation) -> None:
        """The probes and the entry point's samples of the boundary's observation, journaled once; they
        were queried while the agent ran (a stepped world stands still meanwhile)."""
        with self._phase("observe"):
            self.recorder.commit_samples(observation)

    def _next_change(self, due: list[Activation], decoys: list[Decoy]) -> float | None:
        """The instant of the next scheduled change: a revert of a live fault, an injection or a decoy."""
        instants = [
            float(f.activation.end_s) for f in self.driver.live.values()
            if f.fault_id not in self.driver.failed_reverts
        ]  # fmt: skip
        instants += [float(due[0].at_s)] if due else []
        instants += [float(decoys[0].at_s)] if decoys else []
        return min(instants, default=None)

    def _between(self, at: float, due: list[Activation], decoys: list[Decoy]) -> None:
        """The changes due at ``at``, between two boundaries (the world is there). The probes of the faults
        about to be reverted are to be read up to it, with the next boundary's queries, as the rule pack and
        the entry point."""
        self.recorder.defer_probes(self._ending(at), until=at)
        self._apply(at, due, decoys)

    def _ending(self, at: float) -> list[LiveFault]:
        """The live faults due to be reverted by ``at`` (a failed revert is not tried again)."""
        failed = self.driver.failed_reverts
        return [f for f in self._live() if f.activation.end_s <= at and f.fault_id not in failed]

    def _advance(self, t: float, *, series: bool = True) -> bool:
        """Move the world to ``t``, with every series in Prometheus unless ``series`` is False (nothing
        reads them before the next move that asks); False when stopped on the way."""
        with self._phase("advance"):
            self.world.advance_to(t, stop=self.stop, series=series)
        return not self.stop.is_set()

    def _apply(self, t: float, due: list[Activation], decoys: list[Decoy]) -> None:
        """Revert the faults due by t, inject the ones due (after they were observed up to t), then make
        the decoys due. A change the world passed while an earlier one settled is applied now."""
        with self._phase("faults"):
            for fault in self._live():
                if fault.activation.end_s <= t and fault.fault_id not in self.driver.failed_reverts:
                    self.driver.revert(fault.fault_id)
                    if fault.fault_id not in self.driver.live:  # a failed revert keeps it live and sampled
                        self.recorder.end_fault(fault.fault_id)
            while due and due[0].at_s <= t:
                started = self.driver.inject(due.pop(0))
                if started is not None:
                    self.recorder.start_fault(started)
            while decoys and decoys[0].at_s <= t:
                self._decoy(decoys.pop(0))

    def _decoy(self, decoy: Decoy) -> None:
        now = self.world.now_s()
        try:
            applied = apply_decoy(
                self.recorder.client, decoy, topology=self.plan.topology, t=now,
                epoch_s=self.world.origin_epoch_s + now,
            )  # fmt: skip
        except ClusterError as exc:  # a decoy is a nicety of the schedule; the run goes on without it
            self.events.handle(Failed(operation="decoy", error=f"{decoy.target}: {exc}"))
            return
        self.journal.append(applied)

    def finish(self, reason: str) -> list[str]:
        """Revert what is left, take the last observations and close the run; returns reverts that failed."""
        if self.ended:
            return []
        with self.journal.deferred_sync():
            return self._finish(reason)

    def _finish(self, reason: str) -> list[str]:
        live = self._live()
        try:
            if reason != "error":
                self._advance(self.world.now_s())  # every series so far in Prometheus
                self.recorder.observe(live, until=self.world.now_s())
            elif self.recorder.deferred:  # what faults reverted since the last boundary showed is kept
                self._advance(self.world.now_s())
                self.recorder.commit_deferred()
        except Exception as exc:  # the last observations are a nicety; the reverts and the end are not
            self.events.handle(Failed(operation="observation", error=str(exc)))
        left = self.driver.revert_all()
        for fault in live:
            if fault.fault_id not in self.driver.live:
                self.recorder.end_fault(fault.fault_id)
        self._snapshot("end")
        self.recorder.commit_rule_health()
        now = self.world.now_s()
        self.journal.append(RunEnded(t=now, reason=reason))
        self.ended = True
        self.events.handle(Ended(t=now, reason=reason, unreverted=tuple(left)))
        return left

    def _snapshot(self, moment: Literal["start", "end"]) -> None:
        """The workloads as they stand, for the collateral check (docs/metrics.md, "Collateral")."""
        record_service_states(
            self.recorder.client, self.plan.namespace, moment=moment, t=self.world.now_s(),
            record=self.journal.append, events=self.events,
        )  # fmt: skip

    def _live(self) -> list[LiveFault]:
        return sorted(self.driver.live.values(), key=lambda f: f.fault_id)

    @contextmanager
    def _phase(self, what: str) -> Iterator[None]:
        """Adds the wall time of the block to ``wall[what]`` (a runtime fact, never used in logic)."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.wall[what] = self.wall.get(what, 0.0) + time.perf_counter() - began

    def _seen(self, path: Path) -> str:
        """A path of the run as the agent sees it (inside its sandbox, when it has one)."""
        sandbox = self.agent.sandbox if self.agent is not None else None
        return sandbox.inside(path) if sandbox is not None else str(path)

    def _invoke(self, k: int, due: list[Activation], decoys: list[Decoy], observation: Observation) -> None:
        if self.agent is None:
            return  # a no-action baseline: nothing is started, nobody reads an inbox
        write_text_atomically(self.inbox, self.recorder.inbox_text())
        if self.config.agent_name == ORACLE:
            truth = oracle_truth(
                self._live(), now_s=self.world.now_s(), grace_s=float(self.config.delta_s),
                namespace=self.plan.namespace,
            )  # fmt: skip
            write_json_atomically(self.truth_path, truth)
        n = k
        protocol = {
            "MARATHON_INVOCATION": str(n),
            "MARATHON_DEADLINE": f"{time.time() + self.config.budget_s:.3f}",  # the protocol's wall deadline
            "MARATHON_ALERTS": self._seen(self.inbox),
            "MARATHON_APP": self.config.app,
            OPTIONS_ENV: encode_options(self.config.options_for_agent),
            "MARATHON_NAMESPACE": self.plan.namespace,
            "MARATHON_WORKSPACE": self._seen(self.workspace),
        }
        if self.endpoints.tools is not None:
            protocol["MARATHON_MCP_URL"] = self.endpoints.mcp_url
            protocol["MARATHON_REST_URL"] = self.endpoints.rest_url
            protocol["MARATHON_TOKEN"] = self.endpoints.tools.open_invocation(n)
        if self.endpoints.model is not None:
            protocol["OPENAI_BASE_URL"] = self.endpoints.model_url
            protocol["OPENAI_API_KEY"] = self.endpoints.model.open_invocation(n)
        if self.config.agent_name == ORACLE:
            protocol["MARATHON_ORACLE_TRUTH"] = self._seen(self.truth_path)
        self._advance(self.world.now_s())  # what the agent's tools read: every series so far
        start_s = self.world.now_s()
        try:
            with self._phase("agent"):
                outcome = self._agent_runs(
                    self.agent, n, env=agent_environment(protocol), due=due, decoys=decoys,
                    until=float((k + 1) * self.config.delta_s),
                )  # fmt: skip
        finally:
            if self.endpoints.tools is not None:
                self.endpoints.tools.close_invocation()
            if self.endpoints.model is not None:
                self.endpoints.model.close_invocation()
            # Before the artifact samples below, which share the probes' stream.
            self._commit_samples(observation)
        end_s = self.world.now_s()
        self.journal.append(
            Invocation(
                n=n, start_s=start_s, end_s=end_s, exit_code=outcome.exit_code, timed_out=outcome.timed_out
            )
        )
        self.invocations += 1
        tool_calls = self.endpoints.tools.requests if self.endpoints.tools is not None else 0
        self.events.handle(
            Invoked(
                n=n, start_s=start_s, end_s=end_s, exit_code=outcome.exit_code, timed_out=outcome.timed_out,
                wall_s=round(outcome.wall_s, 3), tool_calls=tool_calls,
            )
        )  # fmt: skip
        # Evidence of repair must come after the agent acted: the artifacts are read once the world has
        # moved one sample step past the invocation (a world that stood still is moved; a live one has).
        live = self._live()
        if live:
            target = min(end_s + self.config.sample_step_s, float((k + 1) * self.config.delta_s))
            next_change = self._next_change(due, decoys)
            if next_change is not None:
                target = max(end_s, min(target, next_change))  # not past the next scheduled change
            with self._phase("advance"):
                self.world.catch_up(target, stop=self.stop)
            with self._phase("artifacts"):
                self.recorder.artifacts(live, t=self.world.now_s())

    def _agent_runs(
        self,
        agent: AgentProcess,
        n: int,
        *,
        env: dict[str, str],
        due: list[Activation],
        decoys: list[Decoy],
        until: float,
    ) -> Outcome:
        """Invocation ``n``. A world that moves while the agent runs (a realtime twin, a real cluster) gets
        the changes scheduled meanwhile, before ``until`` (the next boundary), at their instants, beside the
        agent; a stepped world stands still, so nothing falls due."""
        if not self.world.moves_by_itself:
            return agent.invoke(n, env=env, budget_s=self.config.budget_s, stop=self.stop)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent") as pool:
            running = pool.submit(agent.invoke, n, env=env, budget_s=self.config.budget_s, stop=self.stop)
            while (at := self._next_change(due, decoys)) is not None and at < until:
                while not running.done() and not self.stop.is_set() and self.world.now_s() < at:
                    wait([running], timeout=WAIT_POLL_S)
                if running.done() or self.stop.is_set():
                    break
                self._between(at, due, decoys)
            return running.result()
