#!/usr/bin/env python3
# The server's memory after the hostile requests of the "bounded cost" issue (docs/SERVER.md,
# "Limits and threat model"): starts `tzero serve` on MODEL, sends large /tokenize answers, the
# ambiguous grammar with n: 8, 2 x 10^5-deep tool-call arguments and a scoring request, and prints
# the RSS before and after. Usage: tests/load/rss_after_attacks.py TZERO MODEL.gguf
import json, subprocess, sys, time, urllib.request, re, threading
tz = sys.argv[1]; model = sys.argv[2]
p = subprocess.Popen([tz, "serve", "-m", model, "--port", "0", "--no-access-log", "-t", "2", "--max-body-kib", "8192"], stderr=subprocess.PIPE, text=True)
port = None
while port is None:
    line = p.stderr.readline()
    m = re.search(r"listening on http://[^:]+:(\d+)", line)
    if m: port = int(m.group(1))
def rss():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1]) // 1024
def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r: return r.status, len(r.read())
    except urllib.error.HTTPError as e: return e.code, len(e.read())
post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 4})
r0 = rss()
text = ("Once upon a time there was a little girl. " * 12000)[:480000]
for i in range(3): print("tokenize pieces", post("/tokenize", {"content": text, "with_pieces": True}))
print("grammar n=8", post("/v1/completions", {"prompt": "x", "max_tokens": 64, "n": 8, "temperature": 1, "grammar": 'root ::= x\nx ::= [a-z ] x "b" | [a-z ] x "c" | "."'}))
print("deep args", post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[" * 200000 + "]" * 200000}}]}, {"role": "user", "content": "x"}], "max_tokens": 2}))
print("score", post("/v1/completions", {"prompt": "Once upon a time " * 100, "echo": True, "logprobs": 5, "max_tokens": 1, "n": 2}))
time.sleep(1.5)
r1 = rss()
print(f"RSS {r0} MB before, {r1} MB after")
p.terminate(); p.wait()
