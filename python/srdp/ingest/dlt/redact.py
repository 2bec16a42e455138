"""Secret redaction: a failed load never shows the secrets given to the helper.

When dlt's error holds the catalog password or a storage secret (in any form dlt or libpq may
print it), :func:`secret_free_failure` redacts what dlt keeps of the run (its trace, in memory
and in ``trace.pickle``, and failed jobs' ``*.exception`` files) and returns the error text with
each secret replaced by ``***``, as :class:`SrdpDltLoadError`.

dlt also logs a failed load job (its message and traceback) while the load runs, before any
error reaches srdp: :func:`secret_free_logs` redacts dlt's log records for the length of a load.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from dlt.common import logger as dlt_logger
from dlt.common.configuration.specs.base_configuration import is_secret_hint
from dlt.pipeline.pipeline import Pipeline
from dlt.pipeline.trace import TRACE_FILE_NAME, save_trace

from srdp.ingest.dlt.errors import SrdpDltLoadError

from srdp.ingest.dlt.target import DltTarget

__all__ = ["secret_free_failure", "secret_free_logs", "secret_texts"]

#: The end of a storage credential field that names the key (``aws_access_key_id``): dlt does not
#: mark it secret, but with the secret it is the credential, so srdp redacts it too.
_KEY_ID = "key_id"

#: dlt's logger when its runtime configuration names none (``runtime.log_name``).
DLT_LOGGER = "dlt"


def secret_free_failure(target: DltTarget, pipeline: Pipeline, error: BaseException) -> SrdpDltLoadError | None:
    """``None`` when ``error`` (with its causes) holds none of the secrets given for ``target``;
    otherwise :class:`SrdpDltLoadError` with dlt's text redacted, after redacting dlt's trace
    of the run (``trace.pickle``) and failed-job messages in the pipeline's working folder."""
    secrets = secret_texts(target)
    text = "".join(traceback.format_exception(error))
    if not any(secret in text for secret in secrets):
        return None
    _redact_pipeline_files(pipeline, secrets)
    dlt_text = _redact(str(error), secrets)
    hint = ""
    if "password authentication failed" in dlt_text:
        hint = (
            f" PostgreSQL refused the credentials: check catalog_user and catalog_password "
            f"(the writer role's) given to srdp.ingest.dlt.destination({target.catalog!r}, ...)."
        )
    return SrdpDltLoadError(
        f"srdp.ingest.dlt: dlt failed to load into {target.catalog}.{target.dataset_name} "
        f"(catalog {target.catalog_url}, metadata schema {target.metadata_schema or 'main'}); "
        f"secrets in dlt's error are shown as ***.{hint} dlt's error: {dlt_text}"
    )


@contextlib.contextmanager
def secret_free_logs(target: DltTarget) -> Iterator[None]:
    """For the length of the block, every record dlt logs has the secrets given for ``target``
    replaced by ``***``, in its message and in its traceback (dlt logs a failed load job's
    message, which may quote the catalog URL with the password, from its worker threads), and a
    handler that fails to write a record stays silent (:func:`_silent_logging_errors`)."""
    secrets = secret_texts(target)
    if not secrets:
        yield
        return
    redactor = _SecretFreeRecords(secrets)
    loggers = {logging.getLogger(DLT_LOGGER)}
    if dlt_logger.LOGGER is not None:
        loggers.add(dlt_logger.LOGGER)
    for logger in loggers:
        logger.addFilter(redactor)
    try:
        with _silent_logging_errors():
            yield
    finally:
        for logger in loggers:
            logger.removeFilter(redactor)


_silenced = 0
_silenced_lock = threading.Lock()
_raise_exceptions_before = logging.raiseExceptions


@contextlib.contextmanager
def _silent_logging_errors() -> Iterator[None]:
    """``logging.raiseExceptions`` off while any load runs. When a handler cannot write (its stream
    closed), Python's logging prints the failure to stderr with the exception being handled
    chained in: inside a failed dlt job that is dlt's own exception, whose text may quote the
    catalog URL with the password, and no filter sees it. Loads may overlap in threads, so the
    setting is restored when the last one ends."""
    global _silenced, _raise_exceptions_before
    with _silenced_lock:
        if _silenced == 0:
            _raise_exceptions_before = logging.raiseExceptions
            logging.raiseExceptions = False
        _silenced += 1
    try:
        yield
    finally:
        with _silenced_lock:
            _silenced -= 1
            if _silenced == 0:
                logging.raiseExceptions = _raise_exceptions_before


class _SecretFreeRecords(logging.Filter):
    """Rewrites a log record that holds a secret: its message with the arguments applied, and its
    traceback rendered to text, each with every secret replaced by ``***``."""

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(s in message for s in self.secrets):
            record.msg, record.args = _redact(message, self.secrets), None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            if any(s in text for s in self.secrets):
                # Formatters print exc_text when it is set, exc_info only to render it.
                record.exc_text, record.exc_info = text, None
        if record.exc_text:
            record.exc_text = _redact(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = _redact(record.stack_info, self.secrets)
        return True


def secret_texts(target: DltTarget) -> list[str]:
    """The secrets given for ``target`` in every form dlt or libpq may print, longest first: the
    catalog password, and each storage credential field dlt marks secret (the S3 secret, a
    session token) or that names the key (the S3 key id)."""
    texts: set[str] = set()
    if target.catalog_password is not None:
        password = target.catalog_password.reveal()
        texts |= {password, quote(password, safe=" +"), quote(password, safe=""), quote_plus(password)}
    creds = target.storage_credentials
    if creds is not None and hasattr(creds, "get_resolvable_fields"):
        for name, hint in creds.get_resolvable_fields().items():
            value = getattr(creds, name, None)
            if (is_secret_hint(hint) or name.endswith(_KEY_ID)) and isinstance(value, str):
                texts.add(value)
    return sorted((t for t in texts if t), key=len, reverse=True)


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:  # longest first, so a form containing another is replaced whole
        text = text.replace(secret, "***")
    return text


def _redacted(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` (dlt's trace: named tuples, lists, dicts, strings) with every secret redacted."""
    if isinstance(value, str):
        return _redact(value, secrets)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        named: Any = value
        return named._replace(**{f: _redacted(getattr(named, f), secrets) for f in named._fields})
    if isinstance(value, (list, tuple)):
        return type(value)(_redacted(v, secrets) for v in value)
    if isinstance(value, dict):
        return {k: _redacted(v, secrets) for k, v in value.items()}
    return value


def _redact_pipeline_files(pipeline: Pipeline, secrets: Sequence[str]) -> None:
    """Redacts what dlt keeps of a failed run: its trace (in memory and ``trace.pickle``) and the
    ``*.exception`` files of failed jobs in the pipeline's working folder."""
    trace = pipeline.last_trace
    if trace is not None:
        clean = _redacted(trace, secrets)
        try:
            dumped = pickle.dumps(clean)
        except Exception:  # dlt could not have saved it either
            dumped = b""
        if any(s.encode() in dumped for s in secrets):
            clean = None  # a part this walk does not know: drop the trace rather than keep the secret
        # dlt has no public way to replace the trace it holds; last_trace reads _last_trace first.
        pipeline._last_trace = clean
        trace_file = Path(pipeline.working_dir, TRACE_FILE_NAME)
        if clean is None:
            trace_file.unlink(missing_ok=True)
        else:
            save_trace(pipeline.working_dir, clean)
    for path in Path(pipeline.working_dir).rglob("*.exception"):
        text = path.read_text(errors="replace")
        if any(s in text for s in secrets):
            path.write_text(_redact(text, secrets))
