"""The one rule for a test that needs a service, tool or privilege
(``services.needs``): CI is on when ``CI`` is any non-empty string; then a
missing need FAILS the test, naming it; locally it is a skip."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import services
from services import needs, require_env

MISSING_VAR = "SANDBOX_RECLAIM_TEST_NEVER_SET"


@pytest.mark.parametrize("ci", ["true", "1", "false", "yes"])
def test_under_ci_a_missing_need_fails_naming_it(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.delenv(MISSING_VAR, raising=False)
    assert services.in_ci()
    with pytest.raises(pytest.fail.Exception, match="missing the-tool: it is needed") as failed:
        needs("the-tool", False, "it is needed")
    assert f"CI={ci!r}" in str(failed.value)
    with pytest.raises(pytest.fail.Exception, match=MISSING_VAR):
        require_env(MISSING_VAR, "the helper's own test")


@pytest.mark.parametrize("ci", [None, ""])
def test_locally_a_missing_need_skips_naming_it(monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.delenv(MISSING_VAR, raising=False)
    assert not services.in_ci()
    with pytest.raises(pytest.skip.Exception, match="missing the-tool: it is needed"):
        needs("the-tool", False, "it is needed")
    with pytest.raises(pytest.skip.Exception, match=MISSING_VAR):
        require_env(MISSING_VAR, "the helper's own test")


def test_a_need_that_is_met_neither_skips_nor_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(MISSING_VAR, "here")
    needs("the-tool", True, "it is needed")
    assert require_env(MISSING_VAR, "the helper's own test") == "here"


def test_a_whole_pytest_run_fails_under_ci_and_skips_locally(tmp_path: Path) -> None:
    """End to end, as scripts/test-python.sh runs pytest: the exit status and
    the summary line it counts skips from."""
    (tmp_path / "test_needs_missing.py").write_text(
        textwrap.dedent(
            f"""
            from services import require_env

            def test_needs_a_missing_variable() -> None:
                require_env({MISSING_VAR!r}, "the helper's own test")
            """
        )
    )
    here = str(Path(__file__).resolve().parent)

    def run(ci: str | None) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": here}
        if ci is not None:
            env["CI"] = ci
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(tmp_path)]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    local = run(None)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "1 skipped" in local.stdout and MISSING_VAR in local.stdout, local.stdout
    ci = run("1")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "1 failed" in ci.stdout and MISSING_VAR in ci.stdout, ci.stdout


def test_the_scripts_backstop_counts_skips_and_fails_any_under_ci(tmp_path: Path) -> None:
    """scripts/test-skips.sh ``pytest_tests`` (what scripts/test-python.sh
    runs): a skip that bypasses :func:`needs` is counted locally, and fails
    the run under CI."""
    (tmp_path / "test_raw_skip.py").write_text(
        "import pytest\n\n\ndef test_raw() -> None:\n    pytest.skip('bypasses needs')\n"
    )
    root = Path(__file__).resolve().parents[2]
    script = 'set -euo pipefail; source scripts/test-skips.sh; pytest_tests probe "$1" "$2" -q -p no:cacheprovider'

    def run(ci: str | None) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin"}
        if ci is not None:
            env["CI"] = ci
        command = ["bash", "-c", script, "bash", sys.executable, str(tmp_path)]
        return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)

    local = run(None)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "SKIPPED [1] " in local.stdout and "bypasses needs" in local.stdout, local.stdout
    assert local.stdout.splitlines()[-1] == "probe: 1 skipped", local.stdout
    ci = run("true")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "probe: 1 skipped under CI=true: nothing may be skipped in CI" in ci.stderr, ci.stderr
