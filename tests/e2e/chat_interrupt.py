#!/usr/bin/env python3
"""`tzero chat` and Ctrl+C, with the real binary and a real (generated) model.

1. SIGINT while a reply is being written stops that reply and the chat goes on: the next line
   is answered (and that reply stopped the same way), the first reply stays in the conversation
   (the second prompt holds it), and /exit ends with status 0.
2. SIGINT at the prompt ends the chat with status 130 and nothing on stdout.

Usage: chat_interrupt.py TZERO_BINARY. Exit status 0 when both hold, 1 otherwise (the reason
printed). Every wait is bounded.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 60.0


class Chat:
    def __init__(self, binary, model, extra):
        self.proc = subprocess.Popen(
            [binary, "chat", "-m", model, "-t", "2", "--verbose"] + extra,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""
        self.lock = threading.Lock()
        threading.Thread(target=self._pump, args=(self.proc.stdout, "out"), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, "err"), daemon=True).start()

    def _pump(self, stream, name):
        while True:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                return
            with self.lock:
                setattr(self, name, getattr(self, name) + chunk)

    def wait_for(self, what, condition):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            with self.lock:
                if condition(self.out, self.err):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.005)
        self.fail(f"timed out or exited waiting for {what}")

    def send(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def fail(self, why):
        self.proc.kill()
        self.proc.wait()
        with self.lock:
            print(f"FAIL: {why}\n--- stdout ---\n{self.out[-2000:]!r}\n--- stderr ---\n"
                  f"{self.err[-4000:].decode(errors='replace')}")
        sys.exit(1)

    def verbose_lines(self):
        with self.lock:
            return [json.loads(l) for l in self.err.decode().splitlines() if l.startswith("{")]


def stop_mid_reply(binary, model):
    # --ignore-eos, a huge -n and a large context: a reply that only Ctrl+C ends in time.
    chat = Chat(binary, model, ["-n", "1000000", "-c", "32768", "--ignore-eos"])
    chat.wait_for("the banner", lambda o, e: b"type /help" in e)
    chat.send("tell me a long story\n")
    chat.wait_for("the first reply", lambda o, e: len(o) >= 40)
    chat.proc.send_signal(signal.SIGINT)
    chat.wait_for("the first reply to stop", lambda o, e: e.count(b"reply stopped") == 1)
    with chat.lock:
        first_len = len(chat.out)
    chat.send("and then?\n")
    chat.wait_for("the second reply", lambda o, e: len(o) >= first_len + 40)
    chat.proc.send_signal(signal.SIGINT)
    chat.wait_for("the second reply to stop", lambda o, e: e.count(b"reply stopped") == 2)
    chat.send("/exit\n")
    try:
        rc = chat.proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        chat.fail("no exit after /exit")
    time.sleep(0.1)  # the pumps drain
    if rc != 0:
        chat.fail(f"exit status {rc} after /exit, want 0")
    turns = chat.verbose_lines()
    if len(turns) != 2:
        chat.fail(f"{len(turns)} verbose lines, want 2 (one per reply)")
    for t in turns:
        if t["stop_reason"] != "cancelled":
            chat.fail(f"stop_reason {t['stop_reason']!r}, want 'cancelled' (stopped by Ctrl+C)")
        if not 10 <= len(t["tokens"]) < 30000:
            chat.fail(f"{len(t['tokens'])} tokens in a stopped reply")
    p1, t1, p2 = turns[0]["prompt_tokens"], turns[0]["tokens"], turns[1]["prompt_tokens"]
    if p2[: len(p1)] != p1:
        chat.fail("the second prompt does not start with the first")
    # The stopped reply stays in the conversation: the second prompt holds it (re-tokenized
    # from its text, so count loosely) besides the short second message.
    if len(p2) - len(p1) < len(t1) // 2:
        chat.fail(f"the second prompt grew by {len(p2) - len(p1)} tokens; the first reply "
                  f"({len(t1)} tokens) is not in it")
    print(f"ok: two replies stopped ({len(t1)} and {len(turns[1]['tokens'])} tokens), exit 0")


def exit_at_prompt(binary, model):
    chat = Chat(binary, model, ["-n", "8"])
    chat.wait_for("the banner", lambda o, e: b"type /help" in e)
    chat.proc.send_signal(signal.SIGINT)
    try:
        rc = chat.proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        chat.fail("no exit after Ctrl+C at the prompt")
    time.sleep(0.1)
    if rc != 130:
        chat.fail(f"exit status {rc} after Ctrl+C at the prompt, want 130")
    if chat.out:
        chat.fail("stdout is not empty")
    print("ok: Ctrl+C at the prompt exits 130")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([binary, "gen-model", "--preset", "tiny", "-o", model], check=True,
                       stdout=subprocess.DEVNULL, timeout=TIMEOUT)
        stop_mid_reply(binary, model)
        exit_at_prompt(binary, model)


if __name__ == "__main__":
    main()
