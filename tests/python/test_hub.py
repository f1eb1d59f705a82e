# tzero.LLM("ORG/REPO:QUANT") (hub/hf_hub.h): the model comes from the Hugging Face cache, pulled
# from HF_ENDPOINT when missing. Here the endpoint is a loopback server answering like the hub
# (resolve with X-Repo-Commit / X-Linked-Etag / X-Linked-Size and a redirect, the model-info API).
import hashlib
import http.server
import json
import threading

import tzero

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def hub_server(blob: bytes):
    sha = hashlib.sha256(blob).hexdigest()

    class Hub(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, body: bool):
            port = self.server.server_address[1]
            if self.path == "/api/models/acme/tiny-GGUF/revision/main":
                data = json.dumps({"sha": COMMIT, "siblings": [{"rfilename": "tiny-Q8_0.gguf"}]})
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data.encode())
            elif self.path == "/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{port}/cdn/{sha}")
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("X-Linked-Size", str(len(blob)))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == f"/cdn/{sha}":
                self.send_response(200)
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                if body:
                    self.wfile.write(blob)
            else:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()

        def do_HEAD(self):
            self.answer(False)

        def do_GET(self):
            self.answer(True)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_llm_takes_a_hub_repository(model_path, llm, tmp_path, monkeypatch):
    with open(model_path, "rb") as f:
        srv = hub_server(f.read())
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_address[1]}")
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
        monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        pulled = tzero.LLM("acme/tiny-GGUF:Q8_0", threads=2)
        a = pulled.generate("Once upon a time", max_tokens=8)
        b = llm.generate("Once upon a time", max_tokens=8)
        assert a.logits_digest == b.logits_digest and a.tokens == b.tokens
        snap = tmp_path / "hub" / "models--acme--tiny-GGUF" / "snapshots" / COMMIT / "tiny-Q8_0.gguf"
        assert snap.is_symlink()
    finally:
        srv.shutdown()
