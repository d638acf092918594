"""Observing the test's own ``torch.compile`` during one recorded call, without compiling
anything. The graph-break loggers are tapped only between dynamo's compile callbacks, so a
call that compiles nothing costs two list operations; a break is read from the exception
dynamo logs (its type and user stack), never from the message. A class compiled by an earlier
test is not observed (docs/how-to/compile.md, "Keep each compile observable").
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .._core.frames import is_user_file, portable_site
from .._torch_internals import (
    compilation_metrics,
    compile_callbacks,
    compiled_original,
    dynamo_cache_size,
    graph_break_ids,
    graph_break_loggers,
    logged_graph_break,
)
from .health import CompileHealth, GraphBreak, Recompile

if TYPE_CHECKING:
    from torch import nn

_STACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
_COMPILE_ID = re.compile(r"^\s*\d+/\d+: ")
_HINT = re.compile(r"\(HINT: (?P<hint>.*)\)\s*$")


class CompileWatch:
    """Observes the calls of compiled modules during one recording."""

    def __init__(self, rootdir: str | None) -> None:
        self._rootdir = rootdir
        # a forward's code -> whether dynamo had nothing compiled for it when the test first
        # called it
        self._cold: dict[object, bool] = {}
        self._ids: dict[str, str] | None = None

    def begin(self, module: nn.Module) -> CallObservation | None:
        """Begin observing a call of ``module`` (None: not compiled, or compiled before)."""
        original = compiled_original(module)  # (None has no forward: not compiled)
        code = getattr(getattr(type(original), "forward", None), "__code__", None)
        if code is None:
            return None
        cold = self._cold.get(code)
        if cold is None:
            cold = self._cold[code] = dynamo_cache_size(code) == 0
        if not cold:
            return None
        if self._ids is None:
            self._ids = graph_break_ids()
        return CallObservation(self._rootdir, self._ids)


class CallObservation(logging.Handler):
    """One call of a compiled module, observed from :meth:`CompileWatch.begin` to
    :meth:`end`; the handler the graph-break loggers hand each break to."""

    def __init__(self, rootdir: str | None, ids: dict[str, str]) -> None:
        super().__init__(logging.DEBUG)
        self._rootdir, self._ids = rootdir, ids
        self._metrics = compilation_metrics()
        # (kept: the ids of the metrics before the call stay theirs)
        self._before = self._metrics()
        self._callbacks = compile_callbacks()
        # the tapped loggers' levels and propagation, and dynamo's checker of breaks logged
        # before, to put back as the compile ends (None: not tapped)
        self._saved: list[tuple[logging.Logger, int, bool]] | None = None
        self._seen: OrderedDict[Any, Any] | None = None
        self._breaks: list[GraphBreak] = []
        # the exceptions of those breaks (a break is logged up to twice), kept while observing
        self._caught: list[BaseException] = []
        self._callbacks.register_start_callback(self._started)
        self._callbacks.register_end_callback(self._ended)

    def _started(self, _: object) -> None:
        if self._saved is not None:  # (a handler only for a call that compiles)
            return
        loggers, self._checker = graph_break_loggers()
        self._saved = [(log, log.level, log.propagate) for log in loggers]
        # (the checker grows only while dynamo's loggers are on: if the user's are, it is theirs)
        off = [log for log in loggers if not log.isEnabledFor(logging.DEBUG)]
        self._seen = OrderedDict(self._checker.set) if off else None
        for log in off:
            log.setLevel(logging.DEBUG)
            log.propagate = False
        for log in loggers:
            log.addHandler(self)

    def _ended(self, _: object = None) -> None:
        for log, level, propagate in self._saved or ():
            log.removeHandler(self)
            if log.level != level:
                log.setLevel(level)
            log.propagate = propagate
        if self._seen is not None:
            self._checker.set.clear()
            self._checker.set.update(self._seen)
        self._saved = self._seen = None

    def emit(self, record: logging.LogRecord) -> None:
        exc = logged_graph_break()
        gb_type = getattr(exc, "gb_type", None)
        if exc is None or not gb_type or any(exc is seen for seen in self._caught):
            return
        self._caught.append(exc)
        users = [f for f in getattr(exc, "real_stack", None) or () if is_user_file(f.filename)]
        site, function = "unknown", "unknown"
        if users:
            site = portable_site(users[-1].filename, users[-1].lineno or 0, self._rootdir)
            function = users[-1].name
        message = str(getattr(exc, "msg", ""))
        hint = next(
            (ln.strip()[6:] for ln in message.splitlines() if ln.strip().startswith("Hint: ")), None
        )
        kind = self._ids.get(gb_type, gb_type)
        self._breaks.append(GraphBreak(site, function, kind, gb_type, hint))

    def end(self) -> CompileHealth:
        self._callbacks.remove_start_callback(self._started)
        self._callbacks.remove_end_callback(self._ended)
        self._ended()
        self._caught.clear()
        seen = {id(m) for m in self._before}
        graphs = eager = 0
        recompiles: list[Recompile] = []
        for metrics in self._metrics():
            if id(metrics) in seen or metrics.co_name is None or metrics.is_forward is False:
                continue
            graphs += bool(metrics.graph_op_count)
            eager += metrics.fail_type is not None
            if metrics.recompile_reason:
                recompiles.append(self._recompile(metrics))
        return CompileHealth(graphs, tuple(self._breaks), tuple(recompiles), eager)

    def _recompile(self, metrics: Any) -> Recompile:
        reason: str = metrics.recompile_reason
        first = _COMPILE_ID.sub("", reason.split("\n", 1)[0])
        hint = _HINT.search(first)
        guard = first.split("  #", 1)[0].strip()
        if hint is not None:
            guard = guard.removesuffix(hint.group(0)).strip()
        users = [m for m in _STACK_LINE.finditer(reason) if is_user_file(m["file"])]
        if users:
            site = portable_site(users[-1]["file"], int(users[-1]["line"]), self._rootdir)
            function = users[-1]["function"]
        else:
            site = portable_site(metrics.co_filename, metrics.co_firstlineno, self._rootdir)
            function = metrics.co_name
        return Recompile(site, function, guard, None if hint is None else hint["hint"])
