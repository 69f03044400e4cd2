"""What the drift sensor hands a person: the verdict of each flagged materialisation, and the
``on_drift`` hook that receives it (a callable, or the dotted import path of one).

The sensor calls the hook once per flagged materialisation, after the tick is otherwise decided;
a call that raises or outlasts the tick's time for hooks is logged on the tick, naming the
asset, and never fails it.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Seconds a tick waits, all calls together, for its ``on_drift`` hook.
DEFAULT_HOOK_TIMEOUT_SECONDS = 20.0


class DriftVerdict(BaseModel):
    """One flagged materialisation, as ``on_drift`` receives it (and the webhook posts it)."""

    model_config = ConfigDict(frozen=True)

    sensor: str = Field(description="Name of the drift sensor that flagged it.")
    asset_key: str = Field(description='The asset, as "a/b".')
    partition: str | None = Field(description="Its partition; None when unpartitioned.")
    run_id: str | None = Field(description="The run that drifted; None outside any run.")
    previous_run_id: str | None = Field(description="The run it was compared with.")
    verdict: str = Field(description='"drift", or "explained" for a flagged inputs change.')
    reason: str = Field(description='"same inputs", "inputs unknown" or "inputs changed".')
    outcome: str = Field(description='The verdict in one phrase: "drift (same inputs)".')
    explanation: str | None = Field(description="Why the reason means drift, when it needs it.")
    severity: Literal["ERROR", "WARN"] = Field(description="The failed check's severity.")
    summary: str = Field(description="The one line the sensor's tick shows for it.")
    moved_inputs: tuple[str, ...] = Field(description="Upstreams whose data moved.")
    unknown_inputs: tuple[str, ...] = Field(description="Upstreams that cannot be compared.")
    data_hash: str | None = Field(description="The materialisation's data digest.")
    previous_data_hash: str | None = Field(description="The previous one's data digest.")
    record_path: str | None = Field(description="The run record of the materialisation.")
    previous_record_path: str | None = Field(description="The previous run record.")
    storage_id: int = Field(description="The materialisation's event-log storage id.")
    previous_storage_id: int | None = Field(description="The previous one's storage id.")
    timestamp: float = Field(description="When it was materialised (Unix seconds).")


#: An ``on_drift`` hook: called with each flagged verdict; its return value is ignored.
DriftHook = Callable[[DriftVerdict], object]


class DriftHookImportError(ValueError):
    """An ``on_drift`` import path names nothing importable, or something that is not callable."""


def resolve_drift_hook(hook: DriftHook | str | None) -> DriftHook | None:
    """The hook itself: a callable as given, a dotted path (``mypkg.alerts.notify``) imported."""
    if hook is None or callable(hook):
        return hook
    if not isinstance(hook, str):
        raise DriftHookImportError(
            f"on_drift must be a callable or a dotted import path, not {type(hook).__name__}"
        )
    return import_drift_hook(hook)


def import_drift_hook(path: str) -> DriftHook:
    """The callable a dotted path names: the longest importable module, then its attributes."""
    parts = path.strip().split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise DriftHookImportError(
            f"on_drift {path!r} is not a dotted import path such as 'mypkg.alerts.notify'"
        )
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            found: object = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name is not None and (
                module_name == error.name or module_name.startswith(error.name + ".")
            ):
                continue  # this prefix is no module: try a shorter one
            raise DriftHookImportError(
                f"on_drift {path!r}: importing {module_name!r} failed: {error}"
            ) from error
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                raise DriftHookImportError(
                    f"on_drift {path!r}: {module_name!r} has no attribute {attribute!r}"
                )
            found = getattr(found, attribute)
            module_name = f"{module_name}.{attribute}"
        if not callable(found):
            raise DriftHookImportError(
                f"on_drift {path!r} is a {type(found).__name__}, not a callable"
            )
        return found  # type: ignore[return-value]
    raise DriftHookImportError(f"on_drift {path!r}: no module {parts[0]!r} can be imported")


def notify_drift(
    hook: DriftHook,
    verdicts: Sequence[DriftVerdict],
    log: logging.Logger,
    timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS,
) -> None:
    """Hand each verdict to the hook, each call in a thread of its own, all within
    ``timeout_seconds``; what each call came to is logged, naming the asset, and nothing raised.
    Verdicts left when the time is spent are logged as not handed over."""
    deadline = time.monotonic() + timeout_seconds
    for verdict in verdicts:
        where = _where(verdict)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            log.error(
                f"on_drift not called for {where}: this tick's {timeout_seconds:g} s for "
                "on_drift were spent"
            )
            continue
        problem = _call_within(hook, verdict, remaining)
        if problem is None:
            log.info(f"on_drift notified: {where}")
        else:
            log.error(f"on_drift failed for {where}: {problem}")


def _call_within(hook: DriftHook, verdict: DriftVerdict, seconds: float) -> str | None:
    """Call the hook in a daemon thread; None when it returned in time, else what went wrong.
    A call still running after ``seconds`` is left to finish on its own."""
    errors: list[BaseException] = []

    def call() -> None:
        try:
            hook(verdict)
        except BaseException as error:  # reported on the tick; the tick goes on
            errors.append(error)

    thread = threading.Thread(target=call, name=f"on_drift {verdict.asset_key}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return f"it did not return within {seconds:.3g} s (left running; the tick goes on)"
    if errors:
        return f"{type(errors[0]).__name__}: {errors[0]}"
    return None


def _where(verdict: DriftVerdict) -> str:
    """The asset, partition and run a verdict is about, for a log line."""
    asset = verdict.asset_key
    if verdict.partition is not None:
        asset += f" (partition {verdict.partition})"
    return f"{asset} in run {verdict.run_id}" if verdict.run_id else f"{asset} outside any run"
