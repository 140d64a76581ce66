"""Error pages: not found (404), server error (5xx), rate limited (访问过于频繁)."""

from __future__ import annotations

from ..links import Links
from .common import esc


def _doc(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>{esc(title)}</title></head>'
        f'<body><div class="error-page">{body}</div></body></html>'
    )


def render_not_found(links: Links) -> str:
    return _doc(
        "404-页面不存在",
        '<div class="error-img">404</div><p class="error-tip">抱歉，您访问的页面不存在或已被删除！</p>'
        f'<p><a href="{esc(links.www("/"))}">返回中国知网首页</a></p>',
    )


def render_server_error(status: int) -> str:
    return _doc(
        f"{int(status)} - 服务器错误",
        f'<div class="error-img">{int(status)}</div><p class="error-tip">服务器内部错误，系统繁忙，请稍后重试。</p>',
    )


def render_forbidden() -> str:
    """A 403 that refuses outright (no slider): the denial a 403 may also be."""
    return _doc(
        "403-禁止访问",
        '<div class="error-img">403</div><p class="error-tip">抱歉，您无权访问该页面。</p>',
    )


def render_rate_limited() -> str:
    return _doc(
        "访问过于频繁",
        '<p class="error-tip">访问过于频繁，请稍后再试。</p><p>系统检测到异常访问，已暂时限制您的请求。</p>',
    )
