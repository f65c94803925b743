"""The external services the store and provider suites need (PostgreSQL,
a Docker Engine API), from the environment ``make test`` sets up, and the
one rule for any test that needs a service, tool or privilege: :func:`needs`.

Without it a test is skipped locally but FAILS under CI (``CI`` set to any
non-empty string, as in Node and Rust): a missing service must never pass as
green in CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

PG_URL_ENV = "SANDBOX_RECLAIM_PG_URL"
IMAGE_ENV = "SANDBOX_RECLAIM_TEST_IMAGE"


def in_ci() -> bool:
    """CI is on when ``CI`` is any non-empty string (``true``, ``1``, even ``false``)."""
    return os.environ.get("CI", "") != ""


def needs(what: str, available: bool, purpose: str) -> None:
    """Returns when ``available``. Otherwise the test is skipped locally and
    FAILS under CI, the message naming ``what`` is missing and ``purpose``.
    Every skip in tests/python and tests/cross goes through here
    (scripts/test-python.sh counts them, and fails CI on any)."""
    if available:
        return
    message = f"missing {what}: {purpose}"
    if in_ci():
        pytest.fail(f"{message} (CI={os.environ['CI']!r}: a missing service fails in CI)", pytrace=False)
    pytest.skip(message)


def require_env(name: str, purpose: str) -> str:
    """The variable's value; a skip locally, a failure under CI (:func:`needs`)."""
    value = os.environ.get(name, "")
    needs(f"{name} (not set)", value != "", f"{purpose} (make test or scripts/test.sh provides it)")
    return value


def pg_url() -> str:
    return require_env(PG_URL_ENV, "the PostgreSQL store tests need a database URL")


def docker_image() -> str:
    """The test image; also requires DOCKER_HOST (the engine it lives on)."""
    require_env("DOCKER_HOST", "the DockerProvider tests need a Docker Engine API (scripts/podman.sh)")
    return require_env(IMAGE_ENV, "the DockerProvider tests need an image present on the engine")


def fresh_schema(prefix: str = "py") -> str:
    """A schema name no other test (or concurrent run) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def drop_schema(url: str, schema: str) -> None:
    """Drops a test schema and everything in it (psql ships with the server)."""
    psql = shutil.which("psql")
    if psql is None:
        raise RuntimeError("psql is needed to clean up test schemas")
    subprocess.run(
        [psql, url, "-v", "ON_ERROR_STOP=1", "-q", "-c", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
        check=True,
        capture_output=True,
        timeout=60,
    )
