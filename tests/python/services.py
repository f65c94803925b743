"""The external services the store and provider suites need (PostgreSQL,
a Docker Engine API), from the environment ``make test`` sets up.

Without them a suite is skipped locally but FAILS with ``CI=true``: a
missing service must never pass as green in CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

PG_URL_ENV = "SANDBOX_RECLAIM_PG_URL"
IMAGE_ENV = "SANDBOX_RECLAIM_TEST_IMAGE"


def require_env(name: str, purpose: str) -> str:
    """The variable's value; a skip locally, a failure with ``CI=true``."""
    value = os.environ.get(name, "")
    if value:
        return value
    message = f"{name} is not set: {purpose} (make test or scripts/test.sh provides it)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " and CI=true", pytrace=False)
    pytest.skip(message)


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
