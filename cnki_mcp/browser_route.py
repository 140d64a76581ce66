"""How the browser will reach CNKI: directly, through a proxy (which, set where), or decided by
settings `cnki-mcp doctor` does not read. Chromium's own rules, as observed with Chromium on Linux
(docs/simulator.md "The network path"):

* Switches (any system): `--no-proxy-server`, else `--proxy-pac-url`, else `--proxy-auto-detect`,
  else `--proxy-server` with `--proxy-bypass-list` (ignored without it). The last value of a switch
  counts. `--proxy-server` is `[scheme=]uri-list` entries split at ";": an entry without "=" serves
  every URL, else https= serves https, and socks= every scheme without its own entry.
* Windows and macOS: the system's proxy settings.
* Linux in a GNOME-family desktop session: GNOME's proxy settings, and the proxy variables are
  not read at all; the server gives a headless browser in-memory GLib settings (site/browser.py
  `private_browser_env`), where GNOME's proxy mode is "none": direct.
* Otherwise the environment, a lower-case name before its upper-case one (an empty `https_proxy`
  hides `HTTPS_PROXY`): `auto_proxy` (a PAC script), else `all_proxy`, else `http_proxy` /
  `https_proxy` (https pages use only `https_proxy`), else `SOCKS_SERVER`. A value is one proxy
  URI (a list is invalid and skipped). `no_proxy` entries split at "," or ";" and match host suffixes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# Hosts the product opens; a bypass rule counts only when it covers every one ("x" stands for any other).
_CNKI_HOSTS = ("kns.cnki.net", "www.cnki.net", "x.cnki.net")
_GNOME_DESKTOPS = frozenset({"gnome", "unity", "x-cinnamon", "deepin", "pantheon", "ukui"})
_GNOME_SESSIONS = frozenset({"gnome", "mate", "deepin", "ukui"})
_KDE_SESSIONS = frozenset({"kde", "kde4", "kde-plasma"})


@dataclass(frozen=True, slots=True)
class Route:
    kind: Literal["direct", "proxy", "unchecked"]
    via: str = ""  # the setting that decides it, e.g. "HTTPS_PROXY", "CNKI_BROWSER_ARGS --proxy-server"
    address: str = ""  # the proxy's host[:port], never its user name or password


def browser_route(
    environ: Mapping[str, str], browser_args: tuple[str, ...], *, platform: str, headless: bool
) -> Route:
    """The way the browser started with `browser_args` in `environ` will take to https://kns.cnki.net."""
    switches = _switches(browser_args)
    if "no-proxy-server" in switches:
        return Route("direct", "CNKI_BROWSER_ARGS --no-proxy-server")
    for name, what in (("proxy-pac-url", "PAC 脚本"), ("proxy-auto-detect", "自动检测（WPAD）")):
        if name in switches:
            return Route("unchecked", f"CNKI_BROWSER_ARGS --{name}（{what}）")
    if (rules := switches.get("proxy-server")) is not None:
        via = "CNKI_BROWSER_ARGS --proxy-server"
        entry = _https_entry_of_rules(rules)
        uri = _first_uri(entry) if entry else None
        if entry is None or uri is None:
            return Route("direct", f"{via} 不用于 https:// 网址")
        if uri.lower().startswith("direct://"):
            return Route("direct", f"{via}=direct://")
        if _bypassed(switches.get("proxy-bypass-list", ""), suffix=False):
            return Route("direct", "CNKI_BROWSER_ARGS --proxy-bypass-list")
        if "@" in entry:  # Chromium refuses a proxy with user:password here: every page fails
            return Route("proxy", f"{via}（带用户名密码，浏览器不支持：页面将以 ERR_NO_SUPPORTED_PROXIES 失败）", proxy_address(entry))
        return Route("proxy", via, proxy_address(uri))
    if platform == "darwin":
        return Route("unchecked", "macOS 的系统代理设置")
    if not platform.startswith("linux"):
        return Route("unchecked", "Windows 的系统代理设置")
    desktop = _desktop(environ)
    if desktop == "gnome":
        if headless and environ.get("GSETTINGS_BACKEND", "memory") == "memory":
            return Route("direct", "GNOME 桌面会话中，无界面的浏览器不读代理变量")
        return Route("unchecked", "GNOME 桌面的代理设置")
    route = _environment_route(environ)
    if route.kind == "direct" and desktop == "kde":
        return Route("unchecked", "KDE 桌面的代理设置")
    return route


def _switches(args: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for arg in args:
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            found[name] = value  # Chromium's switch names are case-sensitive on Linux: --PROXY-SERVER is ignored
    return found


def _https_entry_of_rules(rules: str) -> str | None:
    """The proxy list `--proxy-server=rules` gives an https URL, as written (a password may hold
    `,`, which also separates its URIs), or None (direct)."""
    for_https = fallback = None
    for entry in (e.strip() for e in rules.split(";")):
        scheme, equals, uris = entry.partition("=")
        if not equals or "://" in scheme:  # `http://user:p=w@host` is a URI, not a scheme rule
            return entry
        if scheme.strip().lower() == "https":
            for_https = uris
        elif scheme.strip().lower() == "socks":
            fallback = uris
    return for_https or fallback


def _first_uri(uris: str) -> str | None:
    return next((u for u in re.split(r"[,\s]+", uris) if u), None)


def _var(environ: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(the name found, its value): `name` as given, else in the other letter case."""
    for key in (name, name.swapcase()):
        if key in environ:
            return key, environ[key]
    return None


def _environment_route(environ: Mapping[str, str]) -> Route:
    if (auto := _var(environ, "auto_proxy")) is not None:
        return Route("unchecked", f"{auto[0]}（PAC 脚本）" if auto[1].strip() else f"{auto[0]}（自动检测）")
    chosen = _valid(environ, "all_proxy")
    if chosen is None:
        per_scheme = [found for name in ("http_proxy", "https_proxy", "ftp_proxy") if (found := _valid(environ, name))]
        if per_scheme:  # Chromium does not send https through http_proxy, nor try SOCKS_SERVER then
            chosen = next((f for f in per_scheme if f[0].lower() == "https_proxy"), None)
            if chosen is None:
                names = "、".join(f[0] for f in per_scheme)
                return Route("direct", f"{names} 不用于 https:// 网址")
        else:
            chosen = _valid(environ, "SOCKS_SERVER")
    if chosen is None:
        return Route("direct")
    no_proxy = _var(environ, "no_proxy")
    if no_proxy is not None and _bypassed(no_proxy[1], suffix=True):
        return Route("direct", no_proxy[0])
    return Route("proxy", chosen[0], proxy_address(chosen[1]))


def _valid(environ: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(name, value) when the variable holds one proxy URI; Chromium skips an empty or listed value."""
    found = _var(environ, name)
    if found is None or not (value := found[1].strip()):
        return None
    rest = value.rpartition("@")[2] if "@" in value else value.partition("://")[2] or value
    host = rest.split("/", 1)[0]
    return found if host and not re.search(r"[,;\s]", host) else None


def _bypassed(rules: str, *, suffix: bool) -> bool:
    """True when the bypass `rules` (entries split at "," or ";") cover every CNKI host. `suffix`:
    NO_PROXY's reading, where "cnki.net" is "*cnki.net"; --proxy-bypass-list reads it as one host."""
    patterns = []
    for rule in (r.strip().lower() for r in re.split(r"[,;]", rules)):
        if "://" in rule:
            scheme, _, rule = rule.partition("://")
            if scheme != "https":
                continue
        host, colon, port = rule.rpartition(":")
        if colon and port.isdigit() and "]" not in port:
            if port != "443":
                continue
            rule = host
        if not rule or rule.startswith("<"):
            continue
        if rule.startswith(".") or (suffix and not rule.startswith("*")):
            rule = "*" + rule
        patterns.append(re.compile(".*".join(map(re.escape, rule.split("*"))) + r"\Z"))
    return all(any(p.match(host) for p in patterns) for host in _CNKI_HOSTS)


def _desktop(environ: Mapping[str, str]) -> str:
    """"gnome", "kde" or "" as Chromium reads the desktop session from the environment."""
    for value in (environ.get("XDG_CURRENT_DESKTOP") or "").split(":"):
        value = value.strip().lower()
        if value in _GNOME_DESKTOPS:
            return "gnome"
        if value == "kde":
            return "kde"
        if value in {"xfce", "lxqt"}:
            return ""
    session = (environ.get("DESKTOP_SESSION") or "").lower()
    if session in _GNOME_SESSIONS:
        return "gnome"
    if session in _KDE_SESSIONS:
        return "kde"
    if "xfce" in session or session == "xubuntu":
        return ""
    if "GNOME_DESKTOP_SESSION_ID" in environ:
        return "gnome"
    return "kde" if "KDE_FULL_SESSION" in environ else ""


def proxy_address(value: str) -> str:
    """host[:port] of the proxy in `value`. Nothing before the value's last "@" is ever shown: that is
    a user name and password, which may hold ",", ";", "/" or ":" unencoded."""
    rest = value.rpartition("@")[2] if "@" in value else value.partition("://")[2] or value
    first = re.split(r"[/?#,;\s]", rest.strip(), maxsplit=1)[0]
    host, colon, port = first.rpartition(":")
    if not colon or not port.isdigit() or (":" in host and not host.endswith("]")):
        host, port = first, ""
    return (f"{host}:{port}" if port else host) or "?"
