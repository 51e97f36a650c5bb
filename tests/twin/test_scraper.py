"""The twin's scrape keeps its span series and the series of unchanged objects between scrapes: what it
lists is still the span export's and what a fresh scrape lists."""

from __future__ import annotations

from itertools import repeat

from orchestrator.twin.boot import Twin
from orchestrator.twin.model.spans import CLIENT, SERVER, SpanMetrics
from orchestrator.twin.observe.metrics import Key, Scraper, SpanSeries, _span_labels
from orchestrator.twin.resources import BY_PLURAL


def _reference(spans: SpanMetrics, namespace: str) -> tuple[list[Key], list[float]]:
    """The span series as the export lists them: calls, sum, count, then each cumulative bucket."""
    keys: list[Key] = []
    values: list[float] = []
    for key, count, total, buckets in spans.export():
        base, per_bucket = _span_labels(namespace, key)
        keys += [
            ("traces_span_metrics_calls_total", base),
            ("traces_span_metrics_duration_milliseconds_sum", base),
            ("traces_span_metrics_duration_milliseconds_count", base),
            *zip(repeat("traces_span_metrics_duration_milliseconds_bucket"), per_bucket),
        ]
        values += [count, total, count, *buckets]
    return keys, values


def test_span_series_follow_the_export_as_values_change_and_keys_appear() -> None:
    spans = SpanMetrics()
    series = SpanSeries("ns")
    spans.observe(("cart", "GetCart", SERVER, "STATUS_CODE_UNSET"), 3.0)
    spans.observe(("cart", "GetCart", SERVER, "STATUS_CODE_UNSET"), 120.0, weight=2.5)
    first = series.values(spans)
    assert (series.keys, first) == _reference(spans, "ns")
    kept = series.keys
    spans.observe(("cart", "GetCart", SERVER, "STATUS_CODE_UNSET"), 7000.0)
    values = series.values(spans)
    assert (series.keys, values) == _reference(spans, "ns")
    assert series.keys is kept  # no span key appeared: the same list of series
    spans.observe(("api", "GetCart", CLIENT, "STATUS_CODE_ERROR"), 20000.0)
    values = series.values(spans)
    assert (series.keys, values) == _reference(spans, "ns")
    assert series.keys is not kept


def test_client_calls_count_each_call_by_its_last_span_key_in_key_order() -> None:
    spans = SpanMetrics()
    series = SpanSeries("ns")
    spans.observe(("api", "GetCart", CLIENT, "STATUS_CODE_ERROR"), 5.0, weight=4.0)
    spans.observe(("api", "GetCart", CLIENT, "STATUS_CODE_UNSET"), 5.0, weight=1.0)
    spans.observe(("cart", "GetCart", SERVER, "STATUS_CODE_UNSET"), 5.0)
    series.values(spans)
    assert series.client_calls() == {("api", "GetCart"): 1.0}


def _fresh(twin: Twin) -> tuple[list[Key], list[float]]:
    """What a scraper that has never scraped before lists for the twin now."""
    store, namespace = twin.cluster.store, twin.namespace
    return Scraper(twin.model, namespace).collect(
        pods=store.list(BY_PLURAL[("", "pods")], namespace),
        deployments=store.list(BY_PLURAL[("apps", "deployments")], namespace),
        statefulsets=store.list(BY_PLURAL[("apps", "statefulsets")], namespace),
        nodes=store.list(BY_PLURAL[("", "nodes")]),
    )


def test_a_scrape_lists_what_a_fresh_scraper_lists_as_pods_and_workloads_change() -> None:
    twin = Twin("online-boutique", seed=3)
    twin.advance(120, flush=False)
    assert twin.series() == _fresh(twin)
    pod = twin.cluster.store.list(BY_PLURAL[("", "pods")], twin.namespace)[0]
    twin.cluster.delete_pod(twin.namespace, pod["metadata"]["name"])
    twin.advance(5, flush=False)
    assert twin.series() == _fresh(twin)
    twin.advance(60, flush=False)
    keys, values = twin.series()
    assert (keys, values) == _fresh(twin)


def test_span_series_listed_again_when_a_span_key_appears_are_the_same_key_objects() -> None:
    spans = SpanMetrics()
    series = SpanSeries("ns")
    spans.observe(("cart", "GetCart", SERVER, "STATUS_CODE_UNSET"), 3.0)
    series.values(spans)
    before = list(series.keys)
    spans.observe(("ad", "GetAds", CLIENT, "STATUS_CODE_ERROR"), 9.0)
    values = series.values(spans)
    assert (series.keys, values) == _reference(spans, "ns")
    again = [key for key in series.keys if key in before]
    assert again == before and all(map(lambda a, b: a is b, again, before))
