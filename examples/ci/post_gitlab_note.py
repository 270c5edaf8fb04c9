"""Post a ragmetrics summary as one merge-request note, updating it on later pushes (GitLab CI; no dependencies).

    python examples/ci/post_gitlab_note.py summary.md

Reads CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID (set by GitLab) and GITLAB_TOKEN (a project access
token with api scope). The note is found by the marker `ragmetrics summary` starts with; the token is sent only
in the PRIVATE-TOKEN header and never printed.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

MARKER = "<!-- ragmetrics-summary -->"


def _call(method: str, url: str, token: str, body: dict[str, str] | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"PRIVATE-TOKEN": token, "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def main() -> int:
    body = Path(sys.argv[1]).read_text(encoding="utf-8")
    api, project, merge_request = (os.environ[k] for k in ("CI_API_V4_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID"))
    token = os.environ["GITLAB_TOKEN"]
    notes_url = f"{api.rstrip('/')}/projects/{project}/merge_requests/{merge_request}/notes"
    mine = None
    page = 1
    while mine is None:
        notes = _call("GET", f"{notes_url}?per_page=100&page={page}", token)
        if not isinstance(notes, list) or not notes:
            break
        mine = next((n for n in notes if str(n.get("body", "")).startswith(MARKER)), None)
        page += 1
    if mine is None:
        _call("POST", notes_url, token, {"body": body})
        print("ragmetrics summary posted to the merge request")
    else:
        _call("PUT", f"{notes_url}/{mine['id']}", token, {"body": body})
        print("ragmetrics summary updated on the merge request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
