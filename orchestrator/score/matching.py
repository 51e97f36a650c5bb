"""Maximum one-to-one matching of faults to incidents with docs/metrics.md's deterministic tie-break."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import networkx as nx

_DIGITS = re.compile(r"(\d+)")


def incident_order_key(incident_id: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order of incident ids, so that ``INC-2`` is lower than ``INC-10`` (no side effects)."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(incident_id) if part
    )


def match_faults(faults: Sequence[str], edges: Mapping[tuple[str, str], int]) -> dict[str, str]:
    """Fault id -> incident id of the preferred maximum matching (no side effects).

    ``faults`` lists fault ids in injection order; ``edges`` maps (fault id, incident id) to the stage-credit
    units (1 to 3) that pairing would earn. Among maximum-cardinality matchings the preferred one has the
    largest total credit, then matches the earliest faults (lexicographically on injection order), then
    gives those faults the lowest incident ids (fault by fault in injection order). Each preference is
    encoded as a band of integer edge weights that no sum of the bands below it can reach, so one
    exact max-weight matching per connected component finds it, and that optimum is unique.
    """
    rank = {fault_id: position for position, fault_id in enumerate(faults)}
    graph = nx.Graph()
    for (fault_id, incident_id), units in edges.items():
        graph.add_edge(("f", fault_id), ("i", incident_id), units=units)
    matched: dict[str, str] = {}
    for component in nx.connected_components(graph):
        matched.update(_match_component(graph.subgraph(component), rank))
    return matched


def _match_component(component: nx.Graph, rank: Mapping[str, int]) -> dict[str, str]:
    fault_ids = sorted((node[1] for node in component if node[0] == "f"), key=rank.__getitem__)
    incident_ids = sorted((node[1] for node in component if node[0] == "i"), key=incident_order_key)
    n, m = len(fault_ids), len(incident_ids)
    fault_pos = {fault_id: position for position, fault_id in enumerate(fault_ids)}
    incident_pos = {incident_id: position for position, incident_id in enumerate(incident_ids)}
    base = m + 1
    fault_band = base**n  # exceeds any sum of incident-order terms
    credit_band = 2**n * fault_band  # exceeds any sum of fault-order plus incident-order terms
    weighted = nx.Graph()
    for (kind_a, a), (_, b), units in component.edges(data="units"):
        fault_id, incident_id = (a, b) if kind_a == "f" else (b, a)
        i, j = fault_pos[fault_id], incident_pos[incident_id]
        weight = units * credit_band + 2 ** (n - 1 - i) * fault_band + (m - j) * base ** (n - 1 - i)
        weighted.add_edge(("f", fault_id), ("i", incident_id), weight=weight)
    pairs = nx.max_weight_matching(weighted, maxcardinality=True, weight="weight")
    result: dict[str, str] = {}
    for u, v in pairs:
        fault_node, incident_node = (u, v) if u[0] == "f" else (v, u)
        result[fault_node[1]] = incident_node[1]
    return result
