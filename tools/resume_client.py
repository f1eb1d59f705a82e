#!/usr/bin/python3
"""A streaming client that survives a replica dying mid-answer (docs/REPLICAS.md).

It streams a completion or chat completion from BASE_URL (a load balancer in front of
interchangeable `tzero serve` replicas). When the connection is cut, the stream ends without
[DONE], or the answer is a 5xx (or 429), it sends the same request again to the same URL with
`"tzero_resume": {"tokens": [the ids received so far]}` (and the seed the first answer reported,
when the request gave none), so another replica continues exactly where the first stopped: the
text, token ids and logits digest it returns are those of an uninterrupted run.

Standard library only. As a module:

    from resume_client import stream_with_resume
    result = stream_with_resume("http://127.0.0.1:8080", body, chat=False)
    result["text"], result["tokens"], result["logits_digest"], result["attempts"]

As a command (prints the result as JSON):

    tools/resume_client.py --base-url http://127.0.0.1:8080 \\
        --body '{"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0}'
"""

import argparse
import http.client
import json
import socket
import sys
import time
import urllib.parse

RETRYABLE_STATUS = {429, 500, 502, 503, 504}


class Retry(Exception):
    """This attempt failed in a way another replica can fix."""


def _connect(base_url, timeout):
    u = urllib.parse.urlsplit(base_url)
    if u.scheme not in ("http", "https"):
        raise ValueError("base URL must be http:// or https://: " + base_url)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    path = u.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return cls(u.hostname, u.port, timeout=timeout), path


def _attempt(base_url, body, chat, timeout, state, on_chunk):
    """One streamed request; appends what arrives to `state`. Returns on [DONE]."""
    conn, prefix = _connect(base_url, timeout)
    path = prefix + ("/chat/completions" if chat else "/completions")
    try:
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            raise Retry("connect: %s" % e)
        state["replica"] = resp.getheader("X-Tzero-Replica", "")
        if resp.status in RETRYABLE_STATUS:
            raise Retry("HTTP %d: %s" % (resp.status, resp.read(2000)[:200]))
        if resp.status != 200:
            raise RuntimeError("HTTP %d: %s" % (resp.status, resp.read(4000).decode("utf-8", "replace")))
        while True:
            try:
                line = resp.readline()
            except (OSError, http.client.HTTPException) as e:
                raise Retry("read: %s" % e)
            if not line:
                raise Retry("the stream ended without [DONE]")
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                if state["finish_reason"] is None:
                    raise Retry("[DONE] without a finish_reason")
                return
            chunk = json.loads(data)
            if "error" in chunk:  # e.g. the replica shutting down mid-stream
                raise Retry("in-stream error: %s" % chunk["error"].get("message"))
            if chunk.get("usage"):
                state["usage"] = chunk["usage"]
            for c in chunk.get("choices", []):
                text = c.get("text")
                if text is None:
                    text = (c.get("delta") or {}).get("content") or ""
                ext = c.get("tzero") or {}
                ids = ext.get("tokens") or []
                state["text"] += text
                state["tokens"] += ids
                if "seed" in ext and state["seed"] is None:
                    state["seed"] = ext["seed"]
                if c.get("finish_reason") is not None:
                    state["finish_reason"] = c["finish_reason"]
                    state["logits_digest"] = ext.get("logits_digest")
                    state["stop_reason"] = ext.get("stop_reason")
                if on_chunk and (ids or text):
                    on_chunk(state)
    finally:
        conn.close()


def stream_with_resume(base_url, body, chat=False, retries=8, timeout=60.0, backoff=0.2,
                       on_chunk=None, cut_after=None, log=None):
    """Streams `body` (a completions or chat request, n = 1) from base_url, resuming on failure.

    on_chunk(state) is called after each chunk that brought text or ids (state["tokens"],
    state["text"], state["replica"]: the X-Tzero-Replica header when the balancer adds one).
    cut_after=k closes the first connection once k tokens arrived (to test resuming).
    Returns {text, tokens, finish_reason, stop_reason, logits_digest, usage, attempts, replicas}.
    """
    state = {"text": "", "tokens": [], "finish_reason": None, "stop_reason": None,
             "logits_digest": None, "usage": None, "seed": body.get("seed"), "replica": ""}
    attempts, replicas = 0, []
    deadline = time.monotonic() + timeout
    while True:
        attempts += 1
        req = dict(body)
        req["stream"] = True
        req["stream_options"] = {"include_usage": True}
        if attempts > 1:
            req["tzero_resume"] = {"tokens": list(state["tokens"])}
            if state["seed"] is not None:
                req["seed"] = state["seed"]
        cut = cut_after if attempts == 1 else None

        def chunk_hook(st, cut=cut):
            if on_chunk:
                on_chunk(st)
            if cut is not None and len(st["tokens"]) >= cut:
                raise Retry("cut by the client after %d tokens" % len(st["tokens"]))

        try:
            _attempt(base_url, req, chat, max(1.0, deadline - time.monotonic()), state, chunk_hook)
            replicas.append(state["replica"])
            break
        except (Retry, socket.timeout) as e:
            replicas.append(state["replica"])
            if log:
                log("attempt %d (%s) failed after %d tokens: %s"
                    % (attempts, state["replica"] or "?", len(state["tokens"]), e))
            if attempts > retries or time.monotonic() >= deadline:
                raise RuntimeError("giving up after %d attempts: %s" % (attempts, e))
            time.sleep(min(backoff * attempts, 2.0))
    out = {k: state[k] for k in ("text", "tokens", "finish_reason", "stop_reason",
                                 "logits_digest", "usage")}
    out["attempts"] = attempts
    out["replicas"] = replicas
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--body", required=True, help="the request as JSON (n must be 1)")
    ap.add_argument("--chat", action="store_true", help="POST /v1/chat/completions")
    ap.add_argument("--retries", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds, all attempts together")
    ap.add_argument("--cut-after", type=int, default=None,
                    help="close the first connection after this many tokens (a test)")
    a = ap.parse_args()
    try:
        r = stream_with_resume(a.base_url, json.loads(a.body), a.chat, a.retries, a.timeout,
                               cut_after=a.cut_after, log=lambda m: print(m, file=sys.stderr))
    except (RuntimeError, ValueError) as e:
        print("resume_client: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
