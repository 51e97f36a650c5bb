"""Starting the parts of one run in order and stopping them in reverse: the world and its Prometheus, the
journal with the manifest and schedule, the revert ledger and applier, the observer and its recorder, the tool
server, the metering proxy and the agent process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from orchestrator.bundle.journal import Journal
from orchestrator.bundle.records import Price, RunManifest, ScheduleRecord
from orchestrator.catalog.topology import known_scope
from orchestrator.mechanisms.applying import Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.run.config import RunConfig
from orchestrator.run.events import Phase, RunEventHandler
from orchestrator.run.faults import FaultDriver
from orchestrator.run.invoking import AgentProcess
from orchestrator.run.observing import Recorder
from orchestrator.run.plan import RunPlan
from orchestrator.run.sandbox import Sandbox
from orchestrator.run.session import ORACLE, Endpoints, Session
from orchestrator.run.world import World, connect_kube_world, start_twin_world
from orchestrator.telemetry.observing import Observer
from orchestrator.telemetry.querying import PrometheusQuerier

CHAOS_NAMESPACE = "chaos-mesh"
BUNDLE_DIR = "bundle"
LEDGER_FILE = "faults.ledger.jsonl"
UPSTREAM_KEY_ENV = "MARATHON_UPSTREAM_KEY"


def price_table() -> dict[str, Price]:
    from orchestrator.run.metering import DEFAULT_PRICES

    return dict(DEFAULT_PRICES)


def manifest_of(config: RunConfig, plan: RunPlan, *, run_id: str, command: list[str]) -> RunManifest:
    """The run manifest: what was run, with every version and hash (no side effects)."""
    v = plan.versions
    params: dict[str, Any] = dataclasses.asdict(plan.schedule.params)
    params.update(
        {
            "schedule_sha256": plan.schedule.content_hash,
            "admission": plan.admission.source,
            "admission_sha256": plan.admission.sha256,
            "backend": config.backend,
            "clock": config.clock,
            "sample_step_s": config.sample_step_s,
            "role": config.role,
        }
    )
    return RunManifest(
        run_id=run_id,
        app=config.app,
        namespace=plan.namespace,
        seed=config.seed,
        catalog_version=v.catalog_version,
        catalog_sha256=v.catalog_sha256,
        rule_pack_version=v.rule_pack_version,
        rule_pack_sha256=v.rule_pack_sha256,
        code_version=v.code_version,
        code_sha256=v.code_sha256,
        agent_name=config.agent_name,
        agent_command=command,
        agent_options=config.options_for_agent,
        delta_s=float(config.delta_s),
        budget_s=config.budget_s,
        grace_s=float(config.delta_s),  # one evaluation window: the span each boundary evaluates
        schedule_params=params,
        price_table=price_table(),
        sandboxed=config.sandboxed,
    )


def _preload(*, tools: bool) -> None:
    """Import what the run needs next (the Kubernetes client's API classes, the tool server) while the main
    thread waits for its Prometheus to become ready: the same imports, done during an idle wait rather than
    after it. Nothing here changes what the run does."""
    with contextlib.suppress(Exception):  # a failing import fails again, loudly, where it is needed
        from kubernetes import client

        for api in ("CoreV1Api", "AppsV1Api", "BatchV1Api", "CustomObjectsApi"):
            getattr(client, api)  # the client loads each API module on first use
        if tools:
            import orchestrator.interface.server  # noqa: F401


def _start_world(config: RunConfig, plan: RunPlan, run_dir: Path) -> World:
    threading.Thread(
        target=_preload, kwargs={"tools": config.role != "baseline"}, name="preload", daemon=True
    ).start()
    if config.backend == "kube":
        assert config.kubeconfig is not None and config.prometheus_url is not None
        return connect_kube_world(kubeconfig=config.kubeconfig, prometheus_url=config.prometheus_url)
    return start_twin_world(
        app=config.app,
        seed=config.seed,
        run_dir=run_dir,
        clock=config.clock,
        speed=config.speed,
        faults=plan.catalog.code_faults(),
    )


@contextmanager
def open_session(
    config: RunConfig,
    plan: RunPlan,
    *,
    run_id: str,
    run_dir: Path,
    command: list[str],
    events: RunEventHandler,
    stop: threading.Event,
) -> Iterator[Session]:
    """Everything started for the run, stopped again (in reverse order) when the block ends."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        journal = Journal(run_dir / BUNDLE_DIR, run_id=run_id)
        stack.callback(journal.close)
        journal.append(manifest_of(config, plan, run_id=run_id, command=command))
        for a in plan.schedule.activations:
            journal.append(
                ScheduleRecord(index=a.index, at_s=a.at_s, duration_s=a.duration_s, catalog_id=a.catalog_id)
            )
        world = _start_world(config, plan, run_dir)
        stack.callback(world.stop)
        servers = [world.stop_soon]  # told to stop together first, then each is waited for in turn
        ledger = Ledger(run_dir / LEDGER_FILE)
        stack.callback(ledger.close)
        ledger.open(Target(kubeconfig=str(world.kubeconfig.resolve()), namespace=plan.namespace,
                           chaos_namespace=CHAOS_NAMESPACE))  # fmt: skip
        client = world.client()
        ctx = Context(
            client=client, namespace=plan.namespace, chaos_namespace=CHAOS_NAMESPACE, settle=world.settle
        )
        warn = _warner(config)
        driver = FaultDriver(
            applier=Applier(ctx, ledger), catalog=plan.catalog, namespace=plan.namespace,
            record=journal.append, now_s=world.now_s, events=events, warn=warn,
            service_scope=partial(known_scope, plan.topology),
        )  # fmt: skip
        querier = PrometheusQuerier(world.prometheus.url)
        stack.callback(querier.close)
        observer = Observer(
            querier=querier, rules=plan.rules, namespace=plan.namespace,
            entry_point=plan.topology.entry_point, origin_epoch_s=world.origin_epoch_s,
            step_s=config.sample_step_s,
        )  # fmt: skip
        recorder = Recorder(observer=observer, client=client, record=journal.append, events=events)
        endpoints = Endpoints()
        sandbox = _sandbox(stack, config=config, run_dir=run_dir) if command else None
        # The run's servers listen on the sandbox's sockets themselves: no relay between them and the agent.
        sockets = {name: sandbox.socket_path(name) for name in ("tools", "model")} if sandbox else {}
        if config.role == "scored" and config.tools:
            tools = _start_tools(
                stack, endpoints, config=config, plan=plan, world=world, client=client, journal=journal,
                recorder=recorder, querier=querier, socket=sockets.get("tools"),
            )  # fmt: skip
            servers.append(tools)
        if config.role == "scored" and config.model_url:
            servers.append(_start_metering(stack, endpoints, config=config, world=world, journal=journal,
                                           socket=sockets.get("model")))  # fmt: skip
        agent = None
        if command:
            if sandbox is not None:
                served = {endpoints.mcp_url: sockets["tools"], endpoints.model_url: sockets["model"]}
                sandbox.open((url for url in served if url), served=served)
            agent = AgentProcess(
                command,
                workspace=run_dir / "workspace",
                log_path=run_dir / "logs" / "agent.log",
                sandbox=sandbox,
            )
            stack.callback(agent.close)
            agent.prepare()
        stack.callback(_tell_all, servers)
        world.begin()
        events.handle(Phase("first boundary"))
        yield Session(
            config=config, plan=plan, world=world, journal=journal, driver=driver, recorder=recorder,
            agent=agent, endpoints=endpoints, run_dir=run_dir, stop=stop, events=events,
        )  # fmt: skip


def _tell_all(stops: list[Callable[[], None]]) -> None:
    for stop_soon in stops:
        stop_soon()


def _sandbox(stack: ExitStack, *, config: RunConfig, run_dir: Path) -> Sandbox | None:
    """The agent's sandbox, opened once the run's tool server and model proxy listen on its sockets too;
    None when unsandboxed."""
    if not config.sandboxed:
        return None
    sandbox = Sandbox(
        workspace=run_dir / "workspace",
        inbox_dir=run_dir / "inbox",
        oracle_dir=run_dir / "oracle" if config.agent_name == ORACLE else None,
        readonly=config.agent_paths,
    )
    stack.callback(sandbox.close)
    return sandbox


def _warner(config: RunConfig) -> Callable[[str], None]:
    def warn(message: str) -> None:
        import sys

        print(f"marathon: {message}", file=sys.stderr)

    return warn


def _start_tools(
    stack: ExitStack,
    endpoints: Endpoints,
    *,
    config: RunConfig,
    plan: RunPlan,
    world: World,
    client: Any,
    journal: Journal,
    recorder: Recorder,
    querier: PrometheusQuerier,
    socket: Path | None,
) -> Callable[[], None]:
    """Start the tool server, on the sandbox's ``socket`` too; returns how to tell it to stop."""
    from orchestrator.interface.backend import Backend
    from orchestrator.interface.server import ToolServer
    from orchestrator.interface.sources import SourceStore

    backend = Backend(
        kube=client,
        topology=plan.topology,
        now_s=world.now_s,
        origin_epoch_s=world.origin_epoch_s,
        sources=SourceStore.of(plan.topology, plan.catalog.entries),
        alerts=lambda: tuple(recorder.history),
        querier=querier,
        traces_url=world.traces_url,
        namespace=plan.namespace,
    )
    server = ToolServer(backend, journal.append)
    mcp_url, rest_url = server.start(unix_socket=socket)
    stack.callback(server.stop)
    endpoints.tools = server
    endpoints.mcp_url, endpoints.rest_url = mcp_url, rest_url
    return server.stop_soon


def _start_metering(
    stack: ExitStack,
    endpoints: Endpoints,
    *,
    config: RunConfig,
    world: World,
    journal: Journal,
    socket: Path | None,
) -> Callable[[], None]:
    """Start the metering proxy, on the sandbox's ``socket`` too; returns how to tell it to stop."""
    from orchestrator.run.metering import MeteringProxy

    assert config.model_url is not None
    key = os.environ.get(UPSTREAM_KEY_ENV) or os.environ.get("OPENAI_API_KEY", "")
    proxy = MeteringProxy(config.model_url, key, journal.append, world.now_s)
    model_url = proxy.start(unix_socket=socket)
    stack.callback(proxy.stop)
    budget = config.token_budget

    class _Gate:
        def open_invocation(self, n: int) -> str:
            return proxy.open_invocation(n, budget)

        def close_invocation(self) -> None:
            proxy.close_invocation()

    endpoints.model = _Gate()
    endpoints.model_url = model_url
    return proxy.stop_soon
