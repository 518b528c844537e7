"""The one rule of relocation's paths: a path under the source prefix keeps what follows the
prefix, behind the target prefix (Java's RewriteTablePathUtil.newPath). The prefixes match as
whole directories ("/a/t" is under "/a/t" and "/a/t/", never under "/a/t2"); a path that is not
under the source prefix cannot be moved and is refused, naming it."""

from __future__ import annotations

from dataclasses import dataclass

from icectl.errors import ValidationError

__all__ = ["PrefixMove", "relative_to"]


def _dir(prefix: str) -> str:
    return prefix if prefix.endswith("/") else prefix + "/"


def relative_to(path: str, prefix: str) -> str | None:
    """What follows ``prefix`` in ``path`` ("" for the prefix itself), None when not under it."""
    if path.rstrip("/") == prefix.rstrip("/"):
        return ""
    d = _dir(prefix)
    return path[len(d):] if path.startswith(d) else None


@dataclass(frozen=True)
class PrefixMove:
    source: str
    target: str

    def relative(self, path: str, what: str = "file") -> str:
        rel = relative_to(path, self.source)
        if rel is None:
            raise ValidationError(f"{what} {path} is not under the source prefix {self.source}",
                                  override="source_prefix",
                                  effect="gives a prefix every path of the table starts with")
        return rel

    def under(self, base: str, path: str, what: str = "file") -> str:
        rel = self.relative(path, what)
        return base if not rel else _dir(base) + rel

    def __call__(self, path: str, what: str = "file") -> str:
        """``path`` moved to the target prefix."""
        return self.under(self.target, path, what)
