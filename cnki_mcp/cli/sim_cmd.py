"""`cnki-mcp sim`: run the offline CNKI simulator until interrupted.

The first stdout line is the origin (`http://127.0.0.1:PORT`), so scripts can read it."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cnki_mcp.sim.scenario import Scenario


def port_number(text: str) -> int:
    from cnki_mcp.cli.serve_cmd import port_number as parse

    return parse(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="监听地址 / listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=0, help="端口 / port (default 0 = any free port)")
    parser.add_argument("--corpus", type=Path, default=None, help="语料目录 / corpus directory (default: bundled)")
    parser.add_argument(
        "--scenario", type=Path, default=None, help="场景 JSON 文件（故障、延迟等）/ scenario JSON file (faults, latency, ...)"
    )
    parser.add_argument(
        "--request-log", type=Path, default=None, help="把每个请求追加到这个 JSONL 文件 / append every request to this JSONL file"
    )
    parser.add_argument(
        "--hosts",
        action="store_true",
        help="以真实的 *.cnki.net 主机名提供 HTTPS / serve HTTPS under the real *.cnki.net names (docs/simulator.md)",
    )


def require_sim_extra(hosts_mode: bool) -> None:
    """HTTPS hosts mode needs the `[sim]` extra (trustme); plain installs do not carry it."""
    import importlib.util

    if hosts_mode and importlib.util.find_spec("trustme") is None:
        from cnki_mcp.errors import ExtraNotInstalled

        raise ExtraNotInstalled(
            "模拟站的 HTTPS 主机名模式需要可选依赖 trustme：pip install 'cnki-research-mcp[sim]'",
            extra="sim",
        )


def load_scenario(path: Path) -> Scenario:
    """The scenario file, or INVALID_ARGUMENT saying what is wrong with it."""
    from cnki_mcp.errors import InvalidInput
    from cnki_mcp.sim.scenario import Scenario as Loaded

    try:
        return Loaded.load(path)
    except OSError as exc:
        raise InvalidInput(f"无法读取场景文件 {path}：{exc.strerror or exc}", field="scenario") from exc
    except ValueError as exc:  # bad JSON (JSONDecodeError) or a rule the simulator refuses
        raise InvalidInput(f"场景文件 {path} 无效：{exc}", field="scenario") from exc
    except (TypeError, KeyError, AttributeError) as exc:
        raise InvalidInput(f"场景文件 {path} 的结构无效：{exc!r}", field="scenario") from exc


def check_request_log(path: Path) -> None:
    """INVALID_ARGUMENT when the request log cannot be appended to (a missing folder, a folder, no
    permission): the simulator appends each request as it answers it, and a failing append dropped
    that request's connection with a traceback while the simulator looked up and running."""
    from cnki_mcp.errors import InvalidInput

    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise InvalidInput(f"无法写入请求日志 {path}：{exc.strerror or exc}", field="request_log") from exc


def run(args: argparse.Namespace) -> int:
    require_sim_extra(args.hosts)
    if args.request_log is not None:
        check_request_log(args.request_log)
    from cnki_mcp.sim.corpus import Corpus
    from cnki_mcp.sim.server import SimServer

    if args.corpus is not None and not (args.corpus / "records.jsonl").is_file():
        from cnki_mcp.errors import InvalidInput

        raise InvalidInput(f"{args.corpus} 不是语料目录（缺少 records.jsonl）", field="corpus")
    corpus = Corpus.load(args.corpus)
    scenario = load_scenario(args.scenario) if args.scenario else None
    try:
        server = SimServer(
            corpus,
            scenario,
            host=args.host,
            port=args.port,
            hosts_mode=args.hosts,
            request_log_path=args.request_log,
        ).start()
    except OSError as exc:
        from cnki_mcp.errors import ListenFailed

        raise ListenFailed(
            f"无法在 {args.host}:{args.port} 上监听：{exc.strerror or exc}；换一个 --port（0 = 任意空闲端口）",
            host=args.host,
            port=args.port,
        ) from exc
    try:
        print(server.origin, flush=True)
    except BrokenPipeError:
        # stdout's reader is gone before the origin line: no script can learn where the simulator
        # listens, so it stops; ending 0 here told `sim | reader` that it had served and stopped
        server.stop()
        from cnki_mcp.cli.main import stdout_gone

        stdout_gone()
        print("模拟站已停止：标准输出已关闭，无人读到它的地址 / simulator stopped: stdout is closed, nobody read its origin", file=sys.stderr)
        return 1
    print(f"records={len(corpus.records)} journals={len(corpus.journals)}", file=sys.stderr, flush=True)
    if args.hosts:
        print("chromium args: " + " ".join(server.chromium_args()), file=sys.stderr, flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stop.wait(3600):
            pass
    finally:
        server.stop()
    return 0
