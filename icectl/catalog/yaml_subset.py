"""The part of YAML that pyiceberg's ``.pyiceberg.yaml`` uses: nested block mappings of plain,
single- or double-quoted scalars, with comments. Anything else (lists, flow collections,
anchors, multi-line scalars, tabs) is refused with the line that has it, rather than guessed:
the standard library reads no YAML, and a catalog's URI must not be misread.
"""

from __future__ import annotations

import re

from icectl.errors import InvalidInput

__all__ = ["parse_yaml_mapping"]

_KEY = re.compile(r"^([A-Za-z0-9_.\-]+)\s*:(?:\s+(.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "\0"}


def _scalar(text: str, where: str) -> str:
    text = text.strip()
    if text[:1] == "'":
        end = text.rfind("'")
        if end <= 0 or text[end + 1:].strip()[:1] not in ("", "#"):
            raise InvalidInput(f"{where}: unterminated quoted value")
        return text[1:end].replace("''", "'")
    if text[:1] == '"':
        out, i = [], 1
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                if text[i + 1] not in _ESCAPES:
                    raise InvalidInput(f"{where}: unsupported escape \\{text[i + 1]}")
                out.append(_ESCAPES[text[i + 1]])
                i += 2
                continue
            if c == '"':
                if text[i + 1:].strip()[:1] not in ("", "#"):
                    raise InvalidInput(f"{where}: text after a quoted value")
                return "".join(out)
            out.append(c)
            i += 1
        raise InvalidInput(f"{where}: unterminated quoted value")
    value = re.split(r"\s+#", text, maxsplit=1)[0].strip()
    if value[:1] in ("[", "{", "&", "*", "!", "|", ">", "@", "`"):
        raise InvalidInput(f"{where}: {value[:1]!r} values are not supported here (write a plain or quoted value)")
    return value


def parse_yaml_mapping(text: str, source: str) -> dict:
    """The nested mapping ``text`` holds (keys lowercased, as pyiceberg reads them)."""
    root: dict = {}
    stack: list[tuple[int, dict]] = [(-1, root)]
    pending: tuple[int, dict, str] | None = None  # a key whose value is a nested mapping
    for number, raw in enumerate(text.splitlines(), 1):
        where = f"{source} line {number}"
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise InvalidInput(f"{where}: tabs are not allowed for indentation")
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        indent = len(line) - len(stripped)
        if pending is not None:
            p_indent, p_parent, p_key = pending
            pending = None
            if indent > p_indent:
                child: dict = {}
                p_parent[p_key] = child
                stack.append((indent, child))
            else:
                p_parent[p_key] = ""
        while stack and indent < stack[-1][0]:
            stack.pop()
        if not stack or indent != stack[-1][0] and stack[-1][0] != -1:
            raise InvalidInput(f"{where}: unexpected indentation")
        if stack[-1][0] == -1:
            if indent != 0:
                raise InvalidInput(f"{where}: unexpected indentation")
            stack[-1] = (0, root)
        m = _KEY.match(stripped)
        if m is None:
            raise InvalidInput(f"{where}: expected 'key: value' (only mappings of plain values are supported)")
        key, rest = m.group(1).lower(), m.group(2)
        mapping = stack[-1][1]
        if key in mapping:
            raise InvalidInput(f"{where}: duplicate key {key!r}")
        if rest is None or rest.strip() == "" or rest.strip().startswith("#"):
            pending = (indent, mapping, key)
            mapping[key] = ""
        else:
            mapping[key] = _scalar(rest, where)
    return root
