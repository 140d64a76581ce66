"""Scenarios: which faults the simulator injects, where and when; latency; identity; accounts.

A scenario is a JSON object (file or dict), e.g.::

    {"seed": 7,
     "faults": [{"path": "/kns8s/brief/grid", "kind": "429", "at": [2]},
                {"path": "/kcms2/article", "kind": "script_rendered_detail", "every": 3}],
     "latency": [{"path": "/kns8s/brief/grid", "ms": 700, "jitter": 0.3}],
     "token_ttl": 600, "identity": {"institution": "某某大学"},
     "require_login_for": ["download"], "accounts": {"reader01": "secret"}}

Schedule of a fault rule (its own 1-based counter `n` of requests under its path prefix):
the rule fires when `from <= n < from + count` (defaults 1 and unbounded) AND, if any of
`at` / `every` / `probability` is given, at least one of them holds (`n in at`, `n % every == 0`,
a seeded draw below `probability`). With no schedule keys it fires on every request.

`form_contains` / `form_lacks` (faults and latency) narrow a rule to the requests some form value
of which holds (or none of which holds) that text; only those requests are counted. The page's
own search click and the product's replay are the same route, arrival order between them is not
fixed, and a test that means "the first replay" says so by form instead of by position.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any


class FaultKind(StrEnum):
    RATE_LIMITED = "429"
    ERROR_500 = "500"
    ERROR_502 = "502"
    ERROR_503 = "503"
    TEMPORARILY_EMPTY = "temporarily_empty"  # grid only
    PAGINATION_MISMATCH = "pagination_mismatch"  # grid only
    VERIFICATION = "verification"  # grid: vericodeForm fragment; pages: redirect to /verify/home
    # HTTP 403 + JSON {"code":-403,"message":"<verify URL>"} on any route (the WAF's slider challenge)
    VERIFICATION_403 = "verification_403"
    SOFT_BLOCK = "soft_block"  # grid only: 200 with a zero-results page (a throttled client)
    FORBIDDEN = "forbidden"  # any: HTTP 403 refusal page (无权访问), not a challenge
    LOGIN_REQUIRED = "login_required"  # redirect to the login page
    TRIAL_READER = "trial_reader"  # reader / htmlread entry
    # htmlread entry: 200 with the bar.cnki.net tip page 账户余额不足 (saved page
    # reader/pluginsx_bar_htmlread_paywall_2026.html) instead of the redirect to the reader
    READER_PAYWALL = "reader_paywall"
    READER_SLIDER = "reader_slider"
    LAZY_READER = "lazy_reader"
    DOWNLOAD_REFUSED = "download_refused"  # download order
    HTML_AS_PDF = "html_as_pdf"
    # download order: handled, then a 302 to a file URL (/bar/download/file) that answers 404
    # (the file host lost the file after CNKI took the order)
    FILE_GONE = "file_gone"
    SCRIPT_RENDERED_DETAIL = "script_rendered_detail"  # detail page
    NOT_FOUND = "not_found"
    # any route answering 200: the headers announce the whole length, the connection drops halfway
    # through the body (a download cut short, a page that never finishes); docs/site-behaviour.md
    TRUNCATED = "truncated"
    # The network path (docs/simulator.md "The network path"): the CDN refusing a proxy's or data
    # centre's address with HTTP 418 and no body, or with an empty 200; the site sending a visitor
    # from outside the mainland to its overseas host
    CDN_418 = "cdn_418"
    EMPTY_PAGE = "empty_page"
    OVERSEAS = "overseas"


class Area(StrEnum):
    DOWNLOAD = "download"
    READER = "reader"
    DETAIL = "detail"
    GRID = "grid"


@dataclass(frozen=True, slots=True)
class FaultRule:
    path: str
    kind: FaultKind
    at: frozenset[int] = frozenset()
    every: int | None = None
    start: int = 1  # "from"
    count: int | None = None
    probability: float | None = None
    method: str | None = None
    reason: str = "余额不足，请充值后下载"  # download_refused text
    form_contains: str | None = None
    form_lacks: str | None = None

    def in_window(self, n: int) -> bool:
        return n >= self.start and (self.count is None or n < self.start + self.count)


@dataclass(frozen=True, slots=True)
class LatencyRule:
    path: str
    ms: float
    jitter: float = 0.0  # fraction: actual = ms * uniform(1 - jitter, 1 + jitter)
    at: frozenset[int] = frozenset()  # only the n-th requests (1-based) under `path`; empty: all
    form_contains: str | None = None
    form_lacks: str | None = None
    # answered as soon as the rule has counted this many requests (at most `ms`): requests that
    # must be in flight together are, however late the client sends the last of them
    until_arrived: int | None = None


def form_matches(rule: FaultRule | LatencyRule, form: dict[str, str] | None) -> bool:
    """Whether the request's form passes the rule's `form_contains` / `form_lacks` filter."""
    values = list((form or {}).values())
    if rule.form_contains is not None and not any(rule.form_contains in v for v in values):
        return False
    return rule.form_lacks is None or not any(rule.form_lacks in v for v in values)


@dataclass(frozen=True, slots=True)
class Identity:
    institution: str | None = None
    personal: str | None = None


@dataclass(frozen=True)
class Scenario:
    faults: tuple[FaultRule, ...] = ()
    latency: tuple[LatencyRule, ...] = ()
    seed: int = 0
    token_ttl: float | None = None  # seconds; None = tokens never expire
    verified_ttl: float = 1800.0  # how long a solved verification protects the browser
    identity: Identity = Identity()
    require_login_for: frozenset[Area] = frozenset()
    accounts: dict[str, str] = field(default_factory=dict)  # empty: any non-empty pair logs in
    wan_counts: bool = True  # render counts >= 10000 as "1.2万" like CNKI

    @classmethod
    def from_obj(cls, obj: dict[str, Any] | Scenario | None) -> Scenario:
        if obj is None:
            return cls()
        if isinstance(obj, Scenario):
            return obj
        known = {
            "faults", "latency", "seed", "token_ttl", "verified_ttl", "identity",
            "require_login_for", "accounts", "wan_counts", "name", "description",
        }  # fmt: skip
        unknown = set(obj) - known
        if unknown:
            raise ValueError(f"unknown scenario keys: {sorted(unknown)}")
        faults = tuple(_fault(f) for f in obj.get("faults") or ())
        latency = tuple(
            LatencyRule(
                str(x["path"]),
                float(x["ms"]),
                float(x.get("jitter", 0.0)),
                frozenset(int(n) for n in x.get("at") or ()),
                _text(x, "form_contains"),
                _text(x, "form_lacks"),
                int(x["until_arrived"]) if x.get("until_arrived") is not None else None,
            )
            for x in obj.get("latency") or ()
        )
        ident = obj.get("identity") or {}
        ttl = obj.get("token_ttl")
        return cls(
            faults=faults,
            latency=latency,
            seed=int(obj.get("seed", 0)),
            token_ttl=float(ttl) if ttl is not None else None,
            verified_ttl=float(obj.get("verified_ttl", 1800.0)),
            identity=Identity(ident.get("institution"), ident.get("personal")),
            require_login_for=frozenset(Area(a) for a in obj.get("require_login_for") or ()),
            accounts={str(k): str(v) for k, v in (obj.get("accounts") or {}).items()},
            wan_counts=bool(obj.get("wan_counts", True)),
        )

    @classmethod
    def load(cls, path: Path | str) -> Scenario:
        return cls.from_obj(json.loads(Path(path).read_text(encoding="utf-8")))


def _fault(obj: dict[str, Any]) -> FaultRule:
    if "path" not in obj or "kind" not in obj:
        raise ValueError(f"fault needs path and kind: {obj}")
    every = obj.get("every")
    if every is not None and int(every) < 1:
        raise ValueError("every must be >= 1")
    count = obj.get("count")
    prob = obj.get("probability")
    return FaultRule(
        path=str(obj["path"]),
        kind=FaultKind(str(obj["kind"])),
        at=frozenset(int(x) for x in obj.get("at") or ()),
        every=int(every) if every is not None else None,
        start=int(obj.get("from", 1)),
        count=int(count) if count is not None else None,
        probability=float(prob) if prob is not None else None,
        method=str(obj["method"]).upper() if obj.get("method") else None,
        reason=str(obj.get("reason", FaultRule.reason)),
        form_contains=_text(obj, "form_contains"),
        form_lacks=_text(obj, "form_lacks"),
    )


def _text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return str(value) if value is not None else None


def answer_delay(latency: float, spent: float) -> float:
    """Seconds still to wait before answering: a latency rule is the site's answer time
    (docs/simulator.md "Scenarios"), and the simulator's own work (`spent`) counts towards it, so a
    large corpus slows an answer only when its evaluation alone takes longer than the rule."""
    return max(0.0, latency - spent)


class FaultSchedule:
    """Per-rule request counters and seeded random draws; thread-safe; `reset()` restarts them."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # a latency rule counted one more request
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._counts = [0] * len(self.scenario.faults)
            self._rngs = [
                random.Random(f"{self.scenario.seed}:{i}") for i in range(len(self.scenario.faults))
            ]
            self._latency_rng = random.Random(f"{self.scenario.seed}:latency")
            self._latency_counts: dict[int, int] = {}

    def fault_for(
        self,
        method: str,
        path: str,
        applicable: frozenset[FaultKind] | None = None,
        form: dict[str, str] | None = None,
    ) -> FaultRule | None:
        """Count this request for every matching rule; return the first rule that fires.

        `applicable` limits which kinds can fire on this route (others still count)."""
        fired: FaultRule | None = None
        with self._lock:
            for i, rule in enumerate(self.scenario.faults):
                if not path.startswith(rule.path) or (rule.method and rule.method != method):
                    continue
                if not form_matches(rule, form):
                    continue
                self._counts[i] += 1
                n = self._counts[i]
                draw = self._rngs[i].random() if rule.probability is not None else 1.0
                if fired is not None or not rule.in_window(n):
                    continue
                if applicable is not None and rule.kind not in applicable:
                    continue
                triggers = []
                if rule.at:
                    triggers.append(n in rule.at)
                if rule.every:
                    triggers.append(n % rule.every == 0)
                if rule.probability is not None:
                    triggers.append(draw < rule.probability)
                if not triggers or any(triggers):
                    fired = rule
        return fired

    def latency_for(self, path: str, form: dict[str, str] | None = None) -> float:
        """Seconds to delay this request (first matching latency rule)."""
        return self._latency(path, form)[0]

    def hold_answer(self, path: str, form: dict[str, str] | None, spent: float) -> float:
        """Seconds still to wait before answering under the first matching latency rule, `spent`
        (the simulator's own work) counting towards it. A rule with `until_arrived` waits here
        instead, until it counted that many requests or its `ms` passed, and returns 0."""
        seconds, index = self._latency(path, form)
        delay = answer_delay(seconds, spent)
        if index is None:
            return delay
        until = self.scenario.latency[index].until_arrived or 0
        with self._arrived:
            self._arrived.wait_for(lambda: self._latency_counts.get(index, 0) >= until, delay)
        return 0.0

    def _latency(self, path: str, form: dict[str, str] | None) -> tuple[float, int | None]:
        """(seconds, index of the rule if it holds until more requests arrived)."""
        for i, rule in enumerate(self.scenario.latency):
            if not path.startswith(rule.path) or not form_matches(rule, form):
                continue
            with self._arrived:
                self._latency_counts[i] = n = self._latency_counts.get(i, 0) + 1
                self._arrived.notify_all()
                if rule.at and n not in rule.at:
                    continue
                factor = self._latency_rng.uniform(1 - rule.jitter, 1 + rule.jitter)
            return max(0.0, rule.ms * factor / 1000.0), (i if rule.until_arrived else None)
        return 0.0, None
