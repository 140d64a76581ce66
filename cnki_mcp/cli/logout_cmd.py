"""`cnki-mcp logout`: sign out of CNKI on this machine by deleting what keeps the login in the data
directory: the browser profile (CNKI's cookies, the browser's cache and history) and the saved
session cookies (`datadir.sign_out`). The library (`cnki.sqlite3`), downloads and exports stay.

It runs only while no server uses the data directory (its lock; DATA_DIRECTORY_IN_USE, exit 2):
a running browser would write its cookies back. The next `login` starts from a new profile.
Deleting `browser-profile/` by hand signs out too: a launch on a new profile discards the
session cookies saved from the old one (`site/browser.BrowserHost._prepare_profile`)."""

from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "退出知网登录：删除数据目录中的浏览器资料（知网 Cookie、浏览器缓存与历史）和保存的会话 Cookie；"
        "文献库、下载与导出文件保留。须先停止使用该数据目录的 cnki-mcp 服务（AI 客户端）。"
    )


def run(args: argparse.Namespace) -> int:
    from cnki_mcp import datadir
    from cnki_mcp.settings import data_dir_of
    from cnki_mcp.store.db import acquire_lock

    data_dir = data_dir_of(os.environ)
    if not data_dir.is_dir():
        print(f"数据目录 {data_dir} 不存在：没有保存的登录状态")
        return 0
    lock = acquire_lock(data_dir, 0.05)  # DATA_DIRECTORY_IN_USE while a server holds it
    try:
        removed = datadir.sign_out(data_dir)
    finally:
        lock.release()
    if not removed:
        print(f"{data_dir} 中没有保存的登录状态（没有浏览器资料，也没有会话 Cookie）")
        return 0
    print(f"已退出知网登录：从 {data_dir} 删除了 {'、'.join(removed)}")
    print("文献库、下载与导出文件保留；下次调用 login 时重新登录")
    return 0
