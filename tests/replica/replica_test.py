#!/usr/bin/python3
"""make replica-test: three `tzero serve` replicas of one model (the 110m preset) behind HAProxy on loopback.

  (a) `tzero probe` through HAProxy reports identical (every run, whichever replica served it);
  (b) a replica SIGKILLed while N clients are mid-answer changes no answer: streaming clients
      resume (tools/resume_client.py), plain ones resend; every answer equals the solo
      reference bit for bit (token ids, text, logits digest);
  (c) a stream cut mid-way (the replica serving it killed, or the client closing after k
      tokens) is resumed on another replica from the ids received and yields exactly the
      uninterrupted run's tokens, text and digest, greedy and seeded (top_p, penalties).

  tests/replica/replica_test.py TZERO_BIN MODEL WORK_DIR
Prints PASS/FAIL per check; exits 1 on any failure, 2 when it cannot set up.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from resume_client import stream_with_resume  # noqa: E402

N_REPLICAS = 3
FAILURES = []


def say(msg):
    print(msg, flush=True)


def check(ok, name, detail=""):
    say(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        FAILURES.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(port, method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        try:
            body = json.loads(data) if data else None
        except ValueError:  # e.g. HAProxy's own 502 page
            body = None
        return r.status, body, r.getheader("X-Tzero-Replica", "")
    finally:
        c.close()


def healthy(port):
    try:
        return http_json(port, "GET", "/health", timeout=2)[0] == 200
    except OSError:
        return False


class Cluster:
    def __init__(self, tz, work, model):
        self.tz, self.work, self.model = tz, work, model
        self.ports = [free_port() for _ in range(N_REPLICAS)]
        self.procs = [None] * N_REPLICAS
        self.lb_port = free_port()
        self.haproxy = None

    def start_replica(self, i):
        log = open(os.path.join(self.work, "replica%d.log" % i), "ab")
        self.procs[i] = subprocess.Popen(
            [self.tz, "serve", "-m", self.model, "--port", str(self.ports[i]), "-t", "1",
             "--parallel", "12", "--ctx", "512", "--model-name", "replica", "--no-access-log"],
            stdout=log, stderr=log)
        for _ in range(300):
            if healthy(self.ports[i]):
                return
            if self.procs[i].poll() is not None:
                raise RuntimeError("replica %d exited; see %s" % (i, log.name))
            time.sleep(0.1)
        raise RuntimeError("replica %d did not become healthy" % i)

    def kill(self, name):
        i = int(name[1:])
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()
        return i

    def restart_dead(self):
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                self.start_replica(i)
        time.sleep(1.5)  # HAProxy's health checks (inter 300 ms, rise 2) see it up again

    def start_haproxy(self):
        cfg = os.path.join(self.work, "haproxy.cfg")
        servers = "\n".join("  server r%d 127.0.0.1:%d check" % (i, p)
                            for i, p in enumerate(self.ports))
        with open(cfg, "w") as f:
            f.write("""global
  maxconn 512
defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
frontend replicas_in
  bind 127.0.0.1:%d
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /health
  http-check expect status 200
  default-server inter 300ms fall 1 rise 2
  http-response set-header X-Tzero-Replica %%[srv_name]
%s
""" % (self.lb_port, servers))
        log = open(os.path.join(self.work, "haproxy.log"), "ab")
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=log, stderr=log)
        for _ in range(100):
            if healthy(self.lb_port):
                time.sleep(1.0)  # every server's first checks
                return
            if self.haproxy.poll() is not None:
                raise RuntimeError("haproxy exited; see " + log.name)
            time.sleep(0.1)
        raise RuntimeError("haproxy did not answer /health")

    def stop(self):
        for p in self.procs + [self.haproxy]:
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


SEEDED = {"temperature": 0.9, "top_p": 0.9, "seed": 4242, "presence_penalty": 0.5,
          "frequency_penalty": 0.3, "repetition_penalty": 1.1}


def reference(port, body, chat=False):
    """The solo answer of one replica, not through HAProxy (non-streaming)."""
    st, r, _ = http_json(port, "POST", "/v1/chat/completions" if chat else "/v1/completions", body)
    if st != 200:
        raise RuntimeError("reference request: HTTP %d %s" % (st, r))
    c = r["choices"][0]
    text = c["message"]["content"] if chat else c["text"]
    return {"text": text, "tokens": c["tzero"]["tokens"], "digest": c["tzero"]["logits_digest"],
            "finish": c["finish_reason"]}


def same(got, ref):
    return (got["tokens"] == ref["tokens"] and got["text"] == ref["text"]
            and got["logits_digest"] == ref["digest"] and got["finish_reason"] == ref["finish"])


def check_probe(cl):
    out = subprocess.run(
        [cl.tz, "probe", "--base-url", "http://127.0.0.1:%d" % cl.lb_port, "--model", "replica",
         "--runs", "3", "--concurrency", "3", "--max-tokens", "12", "--json"],
        capture_output=True, text=True, timeout=300)
    try:
        r = json.loads(out.stdout)
    except ValueError:
        check(False, "(a) probe through HAProxy", "no JSON (exit %d): %s" % (out.returncode,
                                                                           out.stderr[-500:]))
        return
    runs = sum(p["runs"] for p in r["prompts"])
    check(r["identical"] is True and out.returncode == 0 and len(r["system_fingerprints"]) == 1,
          "(a) probe through HAProxy reports identical",
          "%d prompts x samplings, %d runs, fingerprints %s"
          % (len(r["prompts"]), runs, [f["value"] for f in r["system_fingerprints"]]))


def check_kill_mid_run(cl, n_clients=9, max_tokens=100):
    bodies = []
    for i in range(n_clients):
        b = {"prompt": "Replica client %d: once upon a time" % i, "max_tokens": max_tokens,
             "ignore_eos": True, "temperature": 0}
        if i % 2:
            b.update(SEEDED, seed=1000 + i)
        bodies.append(b)
    # The solo references, from one replica directly (sent at once: batch invariance).
    refs = [None] * n_clients

    def ref(i):
        refs[i] = reference(cl.ports[0], bodies[i])

    ref_threads = [threading.Thread(target=ref, args=(i,)) for i in range(n_clients)]
    for t in ref_threads:
        t.start()
    for t in ref_threads:
        t.join(300)
    if None in refs:
        raise RuntimeError("a reference request failed")
    killed, lock = [], threading.Lock()

    def on_chunk(state):
        with lock:
            if not killed and len(state["tokens"]) >= 10 and state["replica"]:
                killed.append(cl.kill(state["replica"]))

    results, errors = [None] * n_clients, []

    def client(i):
        try:
            if i % 3 == 2:  # a plain client: resend the whole request on a failure
                for attempt in range(1, 10):
                    try:
                        st, r, _ = http_json(cl.lb_port, "POST", "/v1/completions", bodies[i])
                    except (OSError, http.client.HTTPException):
                        st, r = -1, None
                    if st == 200 and r:
                        c = r["choices"][0]
                        results[i] = {"text": c["text"], "tokens": c["tzero"]["tokens"],
                                      "logits_digest": c["tzero"]["logits_digest"],
                                      "finish_reason": c["finish_reason"], "attempts": attempt}
                        return
                    time.sleep(0.2 * attempt)
                raise RuntimeError("no answer after 9 attempts")
            results[i] = stream_with_resume("http://127.0.0.1:%d" % cl.lb_port, bodies[i],
                                            on_chunk=on_chunk, timeout=120)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append("client %d: %s" % (i, e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    retried = sum(1 for r in results if r and r["attempts"] > 1)
    equal = sum(1 for r, ref in zip(results, refs) if r and same(r, ref))
    check(not errors and bool(killed) and retried >= 1 and equal == n_clients,
          "(b) a replica SIGKILLed mid-run changes no answer",
          "killed r%s; %d clients (%d streaming with resume, %d resending), %d retried, "
          "%d of %d answers equal the solo reference (%d tokens each)%s"
          % (killed[0] if killed else "?", n_clients, n_clients - n_clients // 3, n_clients // 3,
             retried, equal, n_clients, max_tokens, "; " + "; ".join(errors) if errors else ""))
    cl.restart_dead()


def check_cut_and_resume(cl, how, sampling, k, chat=False):
    body = {"max_tokens": 60, "ignore_eos": True, "temperature": 0}
    if chat:
        body["messages"] = [{"role": "user", "content": "Tell me a %s story" % sampling}]
    else:
        body["prompt"] = "A %s story cut by %s:" % (sampling, how)
    if sampling == "seeded":
        body.update(SEEDED)
    ref = reference(cl.ports[1], body, chat)
    killed = []

    def on_chunk(state):
        if how == "kill" and not killed and len(state["tokens"]) >= k:
            killed.append(cl.kill(state["replica"]))

    got = stream_with_resume("http://127.0.0.1:%d" % cl.lb_port, body, chat=chat,
                             on_chunk=on_chunk, cut_after=k if how == "close" else None,
                             timeout=120)
    moved = how != "kill" or (len(got["replicas"]) >= 2 and got["replicas"][0] != got["replicas"][-1])
    check(same(got, ref) and got["attempts"] >= 2 and moved,
          "(c) %s stream cut by %s after %d tokens%s resumes exactly"
          % (sampling, "killing its replica" if how == "kill" else "closing the connection", k,
             " (chat)" if chat else ""),
          "replicas %s, %d attempts, %d tokens, digest %s %s the uninterrupted run's"
          % ("->".join(got["replicas"]), got["attempts"], len(got["tokens"]),
             got["logits_digest"], "==" if got["logits_digest"] == ref["digest"] else "!="))
    if killed:
        cl.restart_dead()


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    tz, model, work = (os.path.abspath(a) for a in sys.argv[1:])
    cl = Cluster(tz, work, model)
    t0 = time.monotonic()
    try:
        for i in range(N_REPLICAS):
            cl.start_replica(i)
        cl.start_haproxy()
        say("== 3 replicas on ports %s, HAProxy on %d (work dir %s)"
            % (cl.ports, cl.lb_port, work))
        check_probe(cl)
        check_kill_mid_run(cl)
        for sampling in ("greedy", "seeded"):
            check_cut_and_resume(cl, "kill", sampling, 15)
            check_cut_and_resume(cl, "close", sampling, 7)
        check_cut_and_resume(cl, "close", "seeded", 30, chat=True)
    except Exception as e:  # noqa: BLE001
        check(False, "setup or run", str(e))
    finally:
        cl.stop()
    say("== %s: %d failed (%.1f s)" % ("FAIL" if FAILURES else "PASS", len(FAILURES),
                                        time.monotonic() - t0))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
