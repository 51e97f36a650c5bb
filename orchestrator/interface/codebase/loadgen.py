"""The load generator: a Locust scenario with a task module per route it sends (pure)."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Dependency, Facts, Op
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import snake
from orchestrator.interface.codebase.parts import address_setting, dependency_words, op_words
from orchestrator.interface.codebase.python import Python
from orchestrator.interface.codebase.scaffold import job_names, quote


def locust_modules(facts: Facts, unit: int) -> list[Module]:
    """A Locust load generator: a task module per route it sends, and its background flag reads."""
    syn = Python(facts, unit)
    pad = syn.pad
    settings = [Member(s.env, [f"{s.env} = {syn.env(s)}"], callable=False, gap=False) for s in facts.settings]
    image = [
        "FROM python:3.12-slim",
        "WORKDIR /app",
        "COPY requirements.txt .",
        "RUN pip install --no-cache-dir -r requirements.txt",
        "COPY . .",
        'ENTRYPOINT ["locust", "-f", "locustfile.py"]',
    ]
    modules = [
        Module("config.py", "config", head=["import os", ""], members=settings),
        Module("requirements.txt", "build", head=["locust==2.29.1", "requests==2.32.3"]),
        Module("Dockerfile", "image", head=image),
    ]
    tasks = [_task(op, unit) for op in facts.workload]
    modules += [*tasks, _locustfile(facts, [t.members[0].name for t in tasks], unit)]
    modules += [_client(facts, dep, pad) for dep in facts.dependencies]
    for job, parts in job_names(facts):
        calls = [
            f"{pad}{snake(dependency_words(facts.dependency(s.callee)))}_client.{snake(op_words(s.op))}()"
            for s in job.steps
        ]
        imports = [f"import {snake(dependency_words(d))}_client" for d in facts.dependencies]
        body = [["while True:", *calls, f"{pad}time.sleep({round(1 / job.rate_per_second, 3)})"]]
        member = Member(snake(parts), [f"def run_{snake(parts)}():"], body, topic=tuple(parts), rank=2)
        modules.append(
            Module(f"{snake(parts)}.py", "job", job.name, ["import time", "", *imports, ""], [member])
        )
    names = dict.fromkeys(p for op in facts.workload for p in re.findall(r"\{(\w+)\}", op.subject))
    samples = [f"{pad}{quote(a)}: [{quote(a + '-1')}, {quote(a + '-2')}]," for a in names]
    modules.append(Module("tasks/samples.py", "config", head=["SAMPLES = {", *samples, "}"]))
    return modules


def _task(op: Op, unit: int) -> Module:
    """The task that sends one route, with sample values for its path parameters."""
    pad = " " * unit
    parts = op.resource() if op.resource() != ["index"] else ["home"]
    name = snake([op.verb.lower(), *parts])
    params = [
        f"{a} = random.choice(SAMPLES[{quote(a)}])"
        for a in dict.fromkeys(re.findall(r"\{(\w+)\}", op.subject))
    ]
    request = [
        f'with user.client.{op.verb.lower()}(f"{op.subject}", name={quote(op.text)}, '
        "catch_response=True) as r:",
        f"{pad}if r.status_code >= 500:",
        f"{pad * 2}r.failure(r.text[:200])",
    ]
    body = [params, request] if params else [request]
    head = ["import random", "", "from tasks.samples import SAMPLES", ""] if params else []
    member = Member(name, [f"def {name}(user):"], body, topic=tuple(parts), rank=2)
    return Module(f"tasks/{name}.py", "endpoint", op.text, head, [member], unit=unit, top_gap=2)


def _locustfile(facts: Facts, tasks: list[str], unit: int) -> Module:
    pad = " " * unit
    targets = [env for env, target in facts.addresses if target not in {d.name for d in facts.dependencies}]
    host = (targets or ["HOST"])[0]
    head = [
        "from locust import HttpUser, between",
        "",
        "import config",
        *[f"from tasks.{t} import {t}" for t in tasks],
    ]
    body = [
        [
            "wait_time = between(1, 10)",
            f'host = f"http://{{config.{host}}}"',
            "tasks = {",
            *[f"{pad}{name}: 1," for name in tasks],
            "}",
        ]
    ]
    user = Member("WebsiteUser", ["class WebsiteUser(HttpUser):"], body, callable=False)
    return Module("locustfile.py", "main", head=head, members=[user], unit=unit, top_gap=2)


def _client(facts: Facts, dep: Dependency, pad: str) -> Module:
    """A module of functions, one per operation the load generator calls on ``dep``."""
    members = []
    for op in dep.ops:
        path = op.subject if op.protocol == "http" else "/" + "/".join(op_words(op))
        verb = op.verb.lower() if op.protocol == "http" else "post"
        body = [
            [
                f'response = requests.{verb}(f"http://{{config.{address_setting(facts, dep)}}}{path}", '
                "json={}, timeout=2)"
            ],
            ["response.raise_for_status()", "return response.json()"],
        ]
        members.append(
            Member(snake(op_words(op)), [f"def {snake(op_words(op))}():"], body, topic=tuple(op_words(op)))
        )
    head = ["import requests", "", "import config", ""]
    return Module(f"{snake(dependency_words(dep))}_client.py", "client", dep.name, head, members, top_gap=2)
