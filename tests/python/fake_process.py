"""What the fake-proving suites share (test_modal_fake.py, test_boxd_fake.py,
test_kubernetes_fake.py, and the provider suites that import their fakes): a
vendor fake run as a subprocess, serving until its stdin closes, with its
``/_fake/`` control routes; and the check that the official client a fake is
proven with is installed at the pinned version."""

from __future__ import annotations

import importlib.metadata
import json
import ssl
import subprocess
import urllib.request
from collections.abc import Sequence
from typing import Any

from services import needs


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, if any."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def need_package(name: str, pinned: str, purpose: str) -> None:
    """Skips locally, FAILS under CI, unless ``name`` is installed at ``pinned``."""
    version = package_version(name)
    needs(f"the {name} package, version {pinned} (found {version or 'none'})", version == pinned, purpose)


class FakeProcess:
    """A fake started as ``command``: its first stdout line is a JSON object
    (``started``: its URLs and files); it serves until its stdin closes.
    Control routes are under ``control`` (``started["control"]``, else its
    ``url``), over TLS with ``tls`` when the fake serves HTTPS."""

    seed_route = "sandboxes"

    def __init__(self, command: Sequence[str], tls: ssl.SSLContext | None = None) -> None:
        self.process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.started: dict[str, Any] = json.loads(self.process.stdout.readline())
        self.url: str = self.started["url"]
        self.control: str = self.started.get("control", self.url)
        self.tls = tls

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _call(self, method: str, route: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.control}/_fake/{route}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10, context=self.tls) as response:
            return json.loads(response.read())

    def seed(self, items: list[dict[str, Any]]) -> None:
        self._call("POST", self.seed_route, items)

    def faults(self, **faults: object) -> dict[str, Any]:
        answered: dict[str, Any] = self._call("POST", "faults", faults)
        return answered

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._call("GET", "state")
        return state

    def reset(self) -> None:
        self._call("POST", "reset", {})
