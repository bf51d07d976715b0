"""The one error type of the cache model: a request the real API rejects."""

from __future__ import annotations


class CacheRequestError(ValueError):
    """The request breaks a rule the real API rejects (HTTP 400 unless ``status`` says otherwise).

    ``param`` is the offending field as the API's error body names it (None when unknown);
    ``kind`` is the error type (``invalid_request_error``, ``not_found_error``,
    ``INVALID_ARGUMENT``, ...); ``code`` is OpenAI's error code, if any.
    """

    def __init__(self, message: str, param: str | None = None, *, status: int = 400,
                 kind: str = "invalid_request_error", code: str | None = None):
        super().__init__(message)
        self.param, self.status, self.kind, self.code = param, status, kind, code
