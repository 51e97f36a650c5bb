"""Source repair of a code fault end to end: read the deployed source, propose a diff, build, submit."""

from __future__ import annotations

import difflib
from typing import Any

from orchestrator.bundle.records import Intervention
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import Patch
from orchestrator.interface.sources import REGISTRY_NAMESPACE, registry_name
from tests.interface.world import World

SERVICE = "cartservice"


def _fault() -> CodeFault:
    return next(
        e for e in load_catalog("online-boutique").entries if isinstance(e, CodeFault) and e.target == SERVICE
    )


def _release_fault_build(world: World, fault: CodeFault) -> None:
    """Roll the fault build out as the code-fault injector does: a new image tag and its change cause."""
    image = world.backend.topology.service(SERVICE).image.rsplit(":", 1)[0] + f":{fault.inject.image_tag}"
    body = {
        "metadata": {"annotations": {"kubernetes.io/change-cause": fault.inject.change_cause}},
        "spec": {"template": {"spec": {"containers": [{"name": "server", "image": image}]}}},
    }
    world.kube.patch(ObjectRef("Deployment", world.backend.namespace, SERVICE), Patch("strategic", body))
    world.advance(30)


def _result(outcome: dict[str, Any]) -> Any:
    assert outcome["ok"], outcome
    return outcome["result"]


def test_a_repair_of_a_code_fault_builds_an_image_the_registry_says_behaves_as_the_base(ob: World) -> None:
    fault = _fault()
    _release_fault_build(ob, fault)
    caller = ob.caller(5)
    site = ob.backend.sources.site(fault)
    path = site.path
    listing = _result(caller.call("list_source", {"service": SERVICE}))
    assert listing["version"] == fault.inject.image_tag
    assert path in [f["path"] for f in listing["files"]]
    deployed = _result(caller.call("read_source", {"service": SERVICE, "path": path}))["content"]
    assert site.spelled(fault.inject.source.after) in deployed

    repaired = deployed.replace(site.spelled(fault.inject.source.after), site.text)
    diff = "".join(
        difflib.unified_diff(
            deployed.splitlines(keepends=True), repaired.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )
    incident = {"incident_id": "inc-cart", "service": SERVICE}
    patch_id = _result(caller.call("propose_patch", {**incident, "path": path, "diff": diff}))["patch_id"]
    built = _result(caller.call("build_service_image", {**incident, "patch_id": patch_id}))
    assert set(built) == {"service", "image", "tag", "patch_id"}  # nothing says whether the build repairs
    assert built["tag"] == f"{fault.inject.image_tag}-p1"

    configmap = ob.kube.read(ObjectRef("ConfigMap", REGISTRY_NAMESPACE, registry_name(SERVICE, built["tag"])))
    assert configmap["data"] == {
        "service": SERVICE,
        "tag": built["tag"],
        "image": built["image"],
        "behaves-as": "v0.10.6",
        "derived-from": fault.inject.image_tag,
    }

    _result(caller.call("submit_patch", {**incident, "image": built["image"]}))
    deployment = ob.deployment(SERVICE)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == built["image"]  # type: ignore[index]
    assert built["tag"] in deployment["metadata"]["annotations"]["kubernetes.io/change-cause"]  # type: ignore[index]
    after = _result(caller.call("read_source", {"service": SERVICE, "path": path}))
    assert after["version"] == built["tag"]
    assert after["content"] == repaired

    interventions = [r for r in ob.records if isinstance(r, Intervention)]
    assert [i.tool for i in interventions] == ["propose_patch", "build_service_image", "submit_patch"]
    assert all(i.targets == [SERVICE] and i.result == "ok" for i in interventions)

    # The twin's registry holds the pushed build: it is pulled, runs, and behaves as the base version.
    ob.advance(60)
    pods = ob.kube.list_pods(ob.backend.namespace, selector=f"app={SERVICE}")
    running = [p for p in pods if p["spec"]["containers"][0]["image"] == built["image"]]
    assert running and all(p["status"]["phase"] == "Running" for p in running)
    build = ob.twin.twin.registry.lookup(built["image"])
    assert build is not None and build.behaviour is None


def test_a_diff_that_does_not_apply_is_refused_with_the_reason(ob: World) -> None:
    fault = _fault()
    diff = (
        f"--- a/{fault.inject.source.file}\n+++ b/{fault.inject.source.file}\n@@ -1 +1 @@\n-nothing\n+else\n"
    )
    args = {"incident_id": "i", "service": SERVICE, "path": fault.inject.source.file, "diff": diff}
    outcome = ob.caller().call("propose_patch", args)
    assert outcome["error"]["type"] == "DiffError"
    assert "does not apply" in outcome["error"]["message"]
    (intervention,) = [r for r in ob.records if isinstance(r, Intervention)]
    assert intervention.result == "error"


def test_only_images_built_in_this_run_can_be_submitted(ob: World) -> None:
    args = {"incident_id": "i", "service": SERVICE, "image": "evil.example/cartservice:latest"}
    outcome = ob.caller().call("submit_patch", args)
    assert outcome["error"]["type"] == "SourceError"
    assert ob.deployment(SERVICE)["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":v0.10.6")  # type: ignore[index]


def test_the_registry_namespace_is_invisible_to_agents(ob: World) -> None:
    ob.kube.ensure_namespace(REGISTRY_NAMESPACE)
    caller = ob.caller()
    names = {n["name"] for n in _result(caller.call("get_resources", {"kind": "namespaces"}))["items"]}
    assert REGISTRY_NAMESPACE not in names
    outcome = caller.call("get_resources", {"kind": "configmaps", "namespace": REGISTRY_NAMESPACE})
    assert outcome["error"]["type"] == "forbidden"
    assert [r.kind for r in ob.records][-1] == "forbidden_attempt"
