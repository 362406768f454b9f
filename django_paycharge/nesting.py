"""How deeply a JSON body nests arrays and objects, measured without recursion.

Python's JSON parser gives up on deep nesting in a way that depends on the
version: 3.11 and 3.12 raise ``RecursionError`` near 1,000 levels, 3.13 goes
much deeper and, for an unterminated body, reports only "Expecting value".
The API's parser and the webhook receiver measure the nesting themselves, so
a body nested too deeply is told so on every Python.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

# A JSON string (escapes included): brackets inside one do not nest.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.S)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether the parsed ``value`` nests lists and dicts more than ``limit`` levels."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def text_nesting_exceeds(text: str | bytes, limit: int) -> bool:
    """Whether the JSON ``text`` opens more than ``limit`` arrays and objects at once.

    It reads the text as written, well-formed or not (an unterminated body
    counts the brackets it opened), ignoring brackets inside strings.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw))
    return max(accumulate(_STEP[b] for b in brackets), default=0) > limit
