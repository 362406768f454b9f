"""Hostile strings and the detectors that count what got through unescaped.

Every payload carries the marker ``PWN``. Parsed as a browser would, the
rendered HTML must hold no event handler, attribute name, script or style
content carrying it, and no ``javascript:`` URL; a ``<script
type="application/json">`` data block must hold no ``<`` (it could close
itself). Each is one unescaped occurrence.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

XSS = [
    "<script>PWN()</script>",
    "<ScRiPt>PWN()</sCrIpT>",
    "<img src=x onerror=PWN()>",
    '"><svg onload=PWN()>',
    "'><iframe src=javascript:PWN()>",
    "</textarea><script>PWN()</script>",
    "</script><script>PWN()</script>",
    "<scr<script>ipt>PWN()</script>",
    '<a href="javascript:PWN()">x</a>',
    "<details open ontoggle=PWN()>",
    "<body onload=PWN()>",
    "<style>@import'//evil.example/PWN'</style>",
    '" onmouseover="PWN()',
    "' onfocus='PWN()' autofocus '",
    "<math><mtext><table><mglyph><style><img src=x onerror=PWN()>",
    "javascript:PWN()",
    "&lt;script&gt;PWN()&lt;/script&gt;",
    "\u003cscript\u003ePWN()\u003c/script\u003e",
    "{{ PWN }}{% now 'Y' %}",
    "<!--PWN--><script>PWN()</script>",
    "<<script>script>PWN()<</script>/script>",
    "<svg><script>PWN()</script></svg>",
    "日本語<b>PWN</b>",
    "\x00<script>PWN()</script>",
]

_URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "data"}


class _Detector(HTMLParser):
    """Counts what a browser would run or load from the payloads."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hits = 0
        self._raw: list[tuple[str, bool]] = []  # open script/style: (tag, is a JSON data block)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if "pwn" in name.lower():
                self.hits += 1  # an attribute name made of the payload
            elif name.startswith("on") and "PWN" in value:
                self.hits += 1  # an event handler
            elif name in _URL_ATTRS and value.strip().lower().startswith("javascript:"):
                self.hits += 1
        if tag in ("script", "style"):
            is_json = tag == "script" and ("type", "application/json") in attrs
            self._raw.append((tag, is_json))

    def handle_endtag(self, tag: str) -> None:
        if self._raw and self._raw[-1][0] == tag:
            self._raw.pop()

    def handle_data(self, data: str) -> None:
        if not self._raw:
            return
        if self._raw[-1][1]:
            self.hits += data.count("<")  # a data block must not be able to close itself
        elif "PWN" in data:
            self.hits += 1  # payload text inside a running script or a style sheet


def unescaped(html: str) -> int:
    """How many hostile constructs of the payloads survived in ``html``."""
    detector = _Detector()
    detector.feed(html)
    detector.close()
    return detector.hits


# Open redirects: ways of writing "somewhere else" that naive checks accept.
_PREFIXES = [
    "//", "\\\\", "/\\", "\\/", "///", "////", "/%2F", "%2F%2F", "/%5C", "/\t/", "/\n/",
    "/\r/", " //", "\t//", "\x00//", "https://", "http://", "https:", "http:", "https:/",
    "http:\\\\", "HTTPS://", "hTtP://", "//testserver@", "https://testserver@",
    "https://testserver:80@", "//testserver%40", "\uff0f\uff0f", "\u2215\u2215", "\u2044\u2044",
    "/\u3000/", "javascript://", "jav\tascript:", "data:text/html,", "ftp://", "\u200b//",
]  # fmt: skip
_HOSTS = [
    "evil.example", "evil.example:443", "1.2.3.4", "[::1]", "evil\u3002example",
    "\uff45vil.example", "%65vil.example", "testserver.evil.example", "evil.example#@testserver",
]  # fmt: skip
_SUFFIXES = ["", "/", "/path?x=1#f", "\\@testserver"]


def redirect_corpus() -> list[str]:
    """Hundreds of off-site spellings: every prefix x host x suffix."""
    return [p + h + s for p in _PREFIXES for h in _HOSTS for s in _SUFFIXES]


def lands_off_site(location: str, host: str = "testserver") -> bool:
    """Where a browser would go from a ``Location`` header, roughly: off ``host``?

    Browsers drop tabs and newlines, trim control characters and spaces, and
    read a backslash as a slash in http(s) URLs; after that, anything that
    is not http(s) on ``host`` is off-site.
    """
    cleaned = re.sub(r"[\t\n\r]", "", location).strip("\x00\x01\x02 \x1f").replace("\\", "/")
    target = urlsplit(urljoin(f"http://{host}/payments/return/", cleaned))
    return target.scheme not in ("http", "https") or (target.hostname or "") != host
