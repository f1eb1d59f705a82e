#!/usr/bin/env python3
"""A small OpenAI-compatible completions server (Python standard library only) that fails some
requests the way llama.cpp's server does when a completion is not valid UTF-8: HTTP 500 with
{"error": {"code": 500, "message": "[json.exception.type_error.316] invalid UTF-8 byte ...",
"type": "server_error"}}. For the probe's tests (tests/e2e/test_probe_errors.cpp).

Answers POST /v1/completions, streamed (SSE, chunked) or not, with tokens and logprobs that
depend only on the prompt, in llama.cpp's layout (logprobs.content[]). Switches:
  --fail-prompt TEXT     every request with this prompt fails (repeatable)
  --fail-nth TEXT=N      the N-th request with this prompt fails (repeatable)
  --drift-nth TEXT=N     the N-th request with this prompt gets the logprob of token 2 one ulp
                         closer to zero (the same text: only the bits differ) (repeatable)
Prints "PORT <port> PID <pid>" on stdout once it listens; exits after --lifetime seconds.
"""
import argparse
import json
import math
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ERROR = {"error": {"code": 500,
                   "message": "[json.exception.type_error.316] invalid UTF-8 byte at index 3: 0xE6",
                   "type": "server_error"}}
WORDS = [" the", " cat", " sat", " on", " a", " warm", " mat", " and"]


def pairs(values):
    out = {}
    for v in values:
        text, _, n = v.rpartition("=")
        out[text] = int(n)
    return out


def tokens_for(prompt, n, drift):
    base = sum(prompt.encode()) % len(WORDS)
    toks = []
    for i in range(n):
        lp = -0.5 - 0.125 * i
        if drift and i == 2:
            lp = math.nextafter(lp, 0.0)
        word = WORDS[(base + i) % len(WORDS)]
        toks.append({"token": word, "logprob": lp,
                     "top_logprobs": [{"token": word, "logprob": lp},
                                      {"token": " x", "logprob": -3.0}]})
    return toks


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counts = {}
    lock = threading.Lock()
    opts = None

    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(length) or b"{}")
        prompt = req.get("prompt", "")
        with Handler.lock:
            Handler.counts[prompt] = Handler.counts.get(prompt, 0) + 1
            count = Handler.counts[prompt]
        o = Handler.opts
        if prompt in o.fail_prompt or o.fail_nth.get(prompt) == count:
            return self.send_json(500, ERROR)
        toks = tokens_for(prompt, min(int(req.get("max_tokens", 8)), 6),
                          o.drift_nth.get(prompt) == count)
        want = req.get("logprobs") is not None
        head = {"id": "e-%d" % count, "object": "text_completion", "model": req.get("model", ""),
                "system_fingerprint": "fp_err"}
        if not req.get("stream"):
            choice = {"index": 0, "text": "".join(t["token"] for t in toks),
                      "logprobs": {"content": toks} if want else None, "finish_reason": "length"}
            return self.send_json(200, dict(head, choices=[choice]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            b = data.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()

        try:
            for t in toks:
                choice = {"index": 0, "text": t["token"],
                          "logprobs": {"content": [t]} if want else None, "finish_reason": None}
                chunk("data: " + json.dumps(dict(head, choices=[choice])) + "\n\n")
            end = {"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}
            chunk("data: " + json.dumps(dict(head, choices=[end])) + "\n\n")
            chunk("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # a filler cut off by the probe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fail-prompt", action="append", default=[])
    ap.add_argument("--fail-nth", action="append", default=[])
    ap.add_argument("--drift-nth", action="append", default=[])
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    a.fail_nth, a.drift_nth = pairs(a.fail_nth), pairs(a.drift_nth)
    Handler.opts = a
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("PORT %d PID %d" % (server.server_address[1], os.getpid()), flush=True)
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
