"""A loopback stand-in for the Hugging Face Hub's model upload API, as ``huggingface_hub``'s
``HfApi.create_repo`` and ``upload_folder`` call it: ``POST /api/repos/create``, the model card's
YAML check (the front matter is kept in ``cards``), the preupload check (every file is answered "regular", so its bytes travel in the commit) and the NDJSON commit,
whose files are written under ``root/<repo id>/``. No test needs the network."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FakeHub:
    def __init__(self, root: str | Path, token: str | None = None):
        self.root, self.token, self.requests, self.cards = Path(root), token, [], []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, code: int, obj: dict) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                hub.requests.append(("GET", self.path))
                self._json(404, {"error": f"not served here: {self.path}"})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                hub.requests.append(("POST", self.path))
                if hub.token and self.headers.get("authorization") != f"Bearer {hub.token}":
                    self._json(401, {"error": "Invalid credentials"})
                    return
                if self.path == "/api/repos/create":
                    d = json.loads(body)
                    rid = f"{d['organization']}/{d['name']}" if d.get("organization") else d["name"]
                    self._json(200, {"url": f"{hub.url}/{rid}"})
                elif self.path == "/api/validate-yaml":  # the model card's front matter, checked before a commit
                    import yaml

                    meta = yaml.safe_load(json.loads(body)["content"].split("---")[1])
                    hub.cards.append(meta)
                    self._json(200, {"errors": [], "warnings": []})
                elif "/preupload/" in self.path:
                    files = json.loads(body)["files"]
                    self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                               for f in files]})
                elif "/commit/" in self.path:
                    repo = self.path.split("/api/models/", 1)[1].split("/commit/", 1)[0]
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item.get("key") == "file":
                            dest = hub.root / repo / item["value"]["path"]
                            dest.parent.mkdir(parents=True, exist_ok=True)
                            dest.write_bytes(base64.b64decode(item["value"]["content"]))
                    self._json(200, {"commitUrl": f"{hub.url}/{repo}/commit/{'1' * 40}", "commitOid": "1" * 40})
                else:
                    self._json(404, {"error": f"not served here: {self.path}"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
