"""The example CI files: the GitHub workflow and the GitLab job validated against their schemas (check-jsonschema's
vendored copies, offline), and the GitLab note script against a local stand-in for GitLab's notes API: one note,
created once and then updated, the token only in its header."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ci"


@pytest.mark.parametrize(("name", "schema"), [("github-night.yml", "vendor.github-workflows"),
                                              ("gitlab-night.yml", "vendor.gitlab-ci")])  # fmt: skip
def test_the_workflow_files_validate(name: str, schema: str) -> None:
    tool = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(tool).exists():
        pytest.skip("check-jsonschema (the dev extra) validates the workflow files")
    done = subprocess.run([tool, "--builtin-schema", schema, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    assert "ragmetrics summary" in text and "ragmetrics run" in text  # the night, its summary, the gate's exit


class _GitLab(BaseHTTPRequestHandler):
    notes: ClassVar[list[dict[str, Any]]] = []
    tokens: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        page = int(self.path.split("page=")[-1]) if "page=" in self.path else 1
        self._answer(self.notes if page == 1 else [])

    def do_POST(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.notes.append({"id": len(self.notes) + 1, "body": body["body"]})
        self._answer(self.notes[-1])

    def do_PUT(self) -> None:
        self.tokens.append(self.headers.get("PRIVATE-TOKEN", ""))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        note = next(n for n in self.notes if self.path.endswith(f"/notes/{n['id']}"))
        note["body"] = body["body"]
        self._answer(note)


def test_the_gitlab_note_is_one_note_updated(tmp_path: Path) -> None:
    _GitLab.notes = [{"id": 1, "body": "an unrelated comment"}]
    _GitLab.tokens = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GitLab)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "CI_API_V4_URL": f"http://127.0.0.1:{server.server_address[1]}/api/v4",
           "CI_PROJECT_ID": "7", "CI_MERGE_REQUEST_IID": "3", "GITLAB_TOKEN": "glpat-secret"}  # fmt: skip
    try:
        for night in ("first", "second"):
            summary = tmp_path / "summary.md"
            summary.write_text(f"<!-- ragmetrics-summary -->\n## the {night} night\n", encoding="utf-8")
            done = subprocess.run([sys.executable, str(EXAMPLES / "post_gitlab_note.py"), str(summary)], env=env,
                                  capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "glpat-secret" not in done.stdout + done.stderr
    finally:
        server.shutdown()
    assert [n["body"] for n in _GitLab.notes] == ["an unrelated comment",
                                                  "<!-- ragmetrics-summary -->\n## the second night\n"]  # fmt: skip
    assert set(_GitLab.tokens) == {"glpat-secret"}
