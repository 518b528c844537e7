"""Compaction's options and the rules that pick its files (no I/O, no Arrow).

Which files are candidates, which packed groups are rewritten and how many files a group
writes: the reference's ``BinPackRewriteFilePlanner`` rules, used by
:func:`icectl.ops.maintain.compact.plan_compaction` and, without planning a scan, by
:func:`forecast_compaction` (what ``icectl health`` predicts ``compact`` will do).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from icectl.errors import InvalidInput
from icectl.scan.tasks import pack
from icectl.spec.manifests import POSITION_DELETES
from icectl.spec.properties import TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT, property_int

__all__ = ["CompactOptions", "CompactionRules", "kept_groups", "forecast_compaction", "BINPACK", "SORT",
           "MIN_FILE_SIZE_RATIO", "MAX_FILE_SIZE_RATIO", "MIN_INPUT_FILES_DEFAULT",
           "DELETE_FILE_THRESHOLD_DEFAULT", "DELETE_RATIO_THRESHOLD_DEFAULT", "MAX_FILE_GROUP_SIZE_DEFAULT",
           "SPLIT_OVERHEAD", "SPLIT_LOOKBACK", "TARGET_FILE_SIZE", "TARGET_FILE_SIZE_DEFAULT"]

BINPACK = "binpack"
SORT = "sort"
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.80
MIN_INPUT_FILES_DEFAULT = 5
DELETE_FILE_THRESHOLD_DEFAULT = 2**31 - 1
DELETE_RATIO_THRESHOLD_DEFAULT = 0.3
MAX_FILE_GROUP_SIZE_DEFAULT = 100 * 1024**3
SPLIT_OVERHEAD = 5 * 1024
SPLIT_LOOKBACK = 10


@dataclass(frozen=True)
class CompactOptions:
    """The options of Spark's ``rewrite_data_files`` that icectl takes (None: the default)."""

    strategy: str = BINPACK
    sort_order: str | None = None
    target_file_size: int | None = None
    min_file_size: int | None = None
    max_file_size: int | None = None
    min_input_files: int = MIN_INPUT_FILES_DEFAULT
    delete_file_threshold: int = DELETE_FILE_THRESHOLD_DEFAULT
    delete_ratio_threshold: float = DELETE_RATIO_THRESHOLD_DEFAULT
    max_file_group_size: int = MAX_FILE_GROUP_SIZE_DEFAULT
    rewrite_all: bool = False
    partial_progress: int | None = None  # commit after every N groups

    def sizes(self, properties: dict[str, str]) -> tuple[int, int, int]:
        """(target, min, max) file sizes, checked as the reference checks them."""
        target = self.target_file_size
        if target is None:
            target = property_int(properties, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
        lo = self.min_file_size if self.min_file_size is not None else int(target * MIN_FILE_SIZE_RATIO)
        hi = self.max_file_size if self.max_file_size is not None else int(target * MAX_FILE_SIZE_RATIO)
        if target <= 0:
            raise InvalidInput(f"the target file size must be positive (got {target})")
        if lo < 0 or lo >= target:
            raise InvalidInput(f"the minimum file size ({lo}) must be at least 0 and below the "
                               f"target file size ({target})")
        if hi <= target:
            raise InvalidInput(f"the maximum file size ({hi}) must be above the target file "
                               f"size ({target})")
        return target, lo, hi

    def check(self) -> None:
        if self.strategy not in (BINPACK, SORT):
            raise InvalidInput(f"unknown strategy {self.strategy!r} (use binpack or sort)")
        if self.min_input_files < 1:
            raise InvalidInput(f"the minimum number of input files must be at least 1 "
                               f"(got {self.min_input_files})")
        if self.delete_file_threshold < 0:
            raise InvalidInput(f"the delete file threshold must be at least 0 "
                               f"(got {self.delete_file_threshold})")
        if not 0 < self.delete_ratio_threshold <= 1:
            raise InvalidInput(f"the delete ratio threshold must be in (0, 1] "
                               f"(got {self.delete_ratio_threshold})")
        if self.max_file_group_size <= 0:
            raise InvalidInput("the maximum file group size must be positive")
        if self.partial_progress is not None and self.partial_progress < 1:
            raise InvalidInput(f"partial progress must commit after at least 1 group "
                               f"(got {self.partial_progress})")


def _file_scoped_deleted(planned: Any) -> int:
    return sum(d.record_count for d in planned.deletes
               if d.content == POSITION_DELETES and d.referenced_data_file)


class CompactionRules:
    """Which files compaction picks and which groups it keeps (the reference's bin-pack
    planner's rules), and the files a group writes."""

    def __init__(self, opts: CompactOptions, target: int, lo: int, hi: int):
        self.opts, self.target, self.lo, self.hi = opts, target, lo, hi

    @property
    def write_max(self) -> int:
        return int(self.target + (self.hi - self.target) * 0.5)

    def too_many_deletes(self, f: Any) -> bool:
        return len(f.deletes) >= self.opts.delete_file_threshold

    def too_high_delete_ratio(self, f: Any) -> bool:
        if not f.deletes or not f.record_count:
            return False
        known = min(_file_scoped_deleted(f), f.record_count)
        return known / f.record_count >= self.opts.delete_ratio_threshold

    def candidate(self, f: Any) -> bool:
        size = f.file_size_in_bytes
        return (self.opts.rewrite_all or size < self.lo or size > self.hi
                or self.too_many_deletes(f) or self.too_high_delete_ratio(f))

    def keep_group(self, files: list) -> bool:
        n = len(files)
        size = sum(f.file_size_in_bytes for f in files)
        return ((n > 1 and n >= self.opts.min_input_files) or (n > 1 and size > self.target)
                or size > self.hi or any(self.too_many_deletes(f) for f in files)
                or any(self.too_high_delete_ratio(f) for f in files))

    def expected_output_files(self, size: int) -> int:
        if size < self.target:
            return 1
        with_rest = -(-size // self.target)
        without = size // self.target
        if size % self.target > self.lo:
            return with_rest
        if size / without < min(1.1 * self.target, self.write_max):
            return without
        return with_rest

    def split_size(self, size: int) -> int:
        estimated = size // self.expected_output_files(size) + SPLIT_OVERHEAD
        return self.target if estimated < self.target else min(estimated, self.write_max)


def kept_groups(rules: CompactionRules, files: Sequence[Any]) -> Any:
    """The file groups a compaction rewrites of one partition's files (in order): its
    candidates packed into groups of at most the maximum group size, those the rules keep."""
    candidates = [f for f in files if rules.candidate(f)]
    for group in pack(candidates, lambda f: f.file_size_in_bytes, rules.opts.max_file_group_size,
                      lookback=1, largest_bin_first=False):
        if rules.keep_group(group):
            yield group


def forecast_compaction(partitions: Iterable[Sequence[Any]], properties: dict[str, str],
                        options: CompactOptions | None = None) -> tuple[int, int]:
    """(files rewritten, files written) of a compaction, without planning a scan: the files of
    each partition (files of older specs as one partition, as the planner groups them), each
    with ``file_size_in_bytes``, ``record_count`` and ``deletes`` (the delete files that apply,
    with ``content``, ``referenced_data_file`` and ``record_count``), judged by the rules of
    :func:`plan_compaction`."""
    opts = options or CompactOptions()
    opts.check()
    rules = CompactionRules(opts, *opts.sizes(properties))
    rewritten = written = 0
    for files in partitions:
        for group in kept_groups(rules, files):
            rewritten += len(group)
            written += rules.expected_output_files(sum(f.file_size_in_bytes for f in group))
    return rewritten, written
