"""tzero from Python: reproducible temperature-0 (and seeded) generation, scoring, embeddings.

    import tzero
    llm = tzero.LLM("model.gguf", threads=4)
    out = llm.generate(["Once upon a time", "The sky is"], max_tokens=16)
    print(out[0].text, out[0].logits_digest)   # the digest `tzero run` prints for the same request

A batch of prompts runs through tzero's batched engine, and each prompt gets exactly the bits it
gets alone (docs/DETERMINISM.md, "Batch invariance"). Compute runs with the GIL released; Ctrl+C
cancels a call (KeyboardInterrupt). docs/PYTHON.md has the whole API.
"""
from __future__ import annotations

import dataclasses
import json as _json
import os
import shutil
import subprocess
from typing import Iterator, Optional, Sequence, Union

from . import _tzero


class Error(RuntimeError):
    """tzero refused or failed (an unusable model file, an option out of range)."""


class RequestError(Error, ValueError):
    """A request tzero refuses: .param names the field, .kind says why."""

    param: str = ""
    kind: str = ""


_tzero._set_errors(Error, RequestError)
__version__ = _tzero.__version__

Prompt = Union[str, Sequence[int]]


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


@dataclasses.dataclass
class Completion:
    """One prompt's result."""

    prompt_tokens: list
    tokens: list  # generated ids (a final EOS / end of turn included)
    text: str
    finish_reason: str  # stop, length, grammar_dead_end, ...
    stop_reason: str  # eos, eot, stop_string, length, ...
    logits_digest: str  # XXH3-128 over every sampled logits row, as `tzero run` prints it
    logprobs: Optional[list] = None  # per generated token
    top_logprobs: Optional[list] = None  # per generated token: [(id, text, logprob), ...]
    prompt_logprobs: Optional[list] = None  # per prompt token after the first: (id, lp, rank, top)
    logits: Optional[object] = None  # numpy (rows, n_vocab) float32 with return_logits
    tool_calls: Optional[list] = None  # chat with tools: OpenAI's tool_calls entries
    drafted: int = 0  # speculative decoding: drafts verified (rejected: drafted - accepted)
    accepted: int = 0  # drafts equal to the token sampled at their place


def _completion(d: dict) -> Completion:
    top = d.get("top_logprobs")
    if top is not None:
        top = [[(t, _text(s), lp) for (t, s, lp) in row] for row in top]
    plp = d.get("prompt_logprobs")
    if plp is not None:
        plp = [(t, lp, rank, [(a, _text(s), b) for (a, s, b) in tops]) for (t, lp, rank, tops) in plp]
    return Completion(
        prompt_tokens=list(d["prompt_tokens"]),
        tokens=list(d["tokens"]),
        text=_text(d["text"]),
        finish_reason=d["finish_reason"],
        stop_reason=d["stop_reason"],
        logits_digest=d["logits_digest"],
        logprobs=d.get("logprobs"),
        top_logprobs=top,
        prompt_logprobs=plp,
        logits=d.get("logits"),
        drafted=d.get("drafted", 0),
        accepted=d.get("accepted", 0),
    )


def _is_one_prompt(prompts) -> bool:
    return isinstance(prompts, str) or (
        isinstance(prompts, (list, tuple)) and len(prompts) > 0 and isinstance(prompts[0], int)
    )


class LLM:
    """A model opened with its compute options (tzero's session).

    threads: compute threads (results do not depend on it; default: the machine's cores).
    mode: "deterministic" (the contract), "fast" (no contract) or "portable".
    kernels: "auto", "scalar", "avx2", "avx512", ... (same bits). ctx: context per sequence
    (0: min(trained, 4096)). kv_type: "f32" or "f16" (changes the bits). batch: tokens per
    forward pass. max_seqs: sequences computed together. ops: custom kernels "op=name".
    speculative: "none", "ngram-simple" (speculative decoding by prompt lookup) or "draft"
    (draft_model: a GGUF file with the same vocabulary; giving it implies "draft"), up to
    draft_max drafts a step, none under draft_min: the same bits as without, only faster.
    """

    def __init__(self, path: str, threads: Optional[int] = None, mode: str = "deterministic",
                 kernels: str = "auto", ctx: int = 0, kv_type: str = "f32", batch: int = 256,
                 max_seqs: int = 16, use_mmap: bool = True, ops: Sequence[str] = (),
                 speculative: str = "none", draft_model: str = "", draft_max: int = 16,
                 draft_min: int = 0):
        if threads is None:
            threads = os.cpu_count() or 1
        self.path = path
        self._m = _tzero.Model(path, int(threads), mode, kernels, int(ctx), kv_type, int(batch),
                               int(max_seqs), bool(use_mmap), list(ops), str(speculative),
                               str(draft_model), int(draft_max), int(draft_min))
        self.info = self._m.info()

    def __repr__(self) -> str:
        return f"tzero.LLM({self.info['description']}, fingerprint {self.info['fingerprint']})"

    # --- requests --------------------------------------------------------------------------

    def _request(self, prompt: Prompt, max_tokens, temperature, top_p, top_k, min_p, seed, stop,
                 stop_tokens, ignore_eos, logprobs, prompt_logprobs, grammar, json_schema,
                 repetition_penalty, presence_penalty, frequency_penalty):
        r = _tzero.RequestParams()
        if isinstance(prompt, str):
            r.prompt = prompt
            r.prompt_tokens = self.tokenize(prompt)
        else:
            r.prompt_tokens = [int(t) for t in prompt]
            if not r.prompt_tokens:
                raise RequestError("a token-id prompt must hold at least one token")
        r.max_tokens = int(max_tokens)
        s = r.sampling
        s.temperature = float(temperature)
        s.top_p = float(top_p)
        s.top_k = int(top_k)
        s.min_p = float(min_p)
        s.seed = int(seed)
        s.repetition_penalty = float(repetition_penalty)
        s.presence_penalty = float(presence_penalty)
        s.frequency_penalty = float(frequency_penalty)
        if logprobs is not None:
            s.logprobs = True
            s.top_logprobs = int(logprobs)
        if prompt_logprobs is not None:
            r.prompt_logprobs = True
            r.prompt_top_logprobs = int(prompt_logprobs)
        if isinstance(stop, str):
            stop = [stop]
        r.stop = list(stop or [])
        r.stop_tokens = [int(t) for t in (stop_tokens or [])]
        r.ignore_eos = bool(ignore_eos)
        if grammar is not None and json_schema is not None:
            raise RequestError("give grammar or json_schema, not both")
        if json_schema is not None:
            schema = json_schema if isinstance(json_schema, str) else _json.dumps(json_schema)
            grammar = _tzero.json_schema_to_gbnf(schema)
        if grammar is not None:
            r.grammar = grammar
        return r

    def generate(self, prompts: Union[Prompt, Sequence[Prompt]], max_tokens: int = 16,
                 temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0, min_p: float = 0.0,
                 seed: int = 0, stop=None, stop_tokens=None, ignore_eos: bool = False,
                 logprobs: Optional[int] = None, prompt_logprobs: Optional[int] = None,
                 grammar: Optional[str] = None, json_schema=None, repetition_penalty: float = 1.0,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 return_logits: bool = False):
        """Completions of one prompt (a string or a list of token ids) or of a list of them.

        Returns a Completion, or a list of them in order. Temperature 0 is greedy; seed fixes a
        sampled run. logprobs=N: each generated token's logprob and N alternatives;
        prompt_logprobs=N: every prompt token's after the first. return_logits=True: each
        result's .logits holds every evaluated logits row (float32), the rows `tzero run
        --logits-out` writes (through `tzero run`'s path; not with logprobs).
        """
        one = _is_one_prompt(prompts)
        plist = [prompts] if one else list(prompts)
        reqs = [self._request(p, max_tokens, temperature, top_p, top_k, min_p, seed, stop,
                              stop_tokens, ignore_eos, logprobs, prompt_logprobs, grammar,
                              json_schema, repetition_penalty, presence_penalty,
                              frequency_penalty) for p in plist]
        if return_logits:
            if logprobs is not None or prompt_logprobs is not None:
                raise RequestError("return_logits gives the rows; logprobs come with it in numpy")
            out = [self._m.generate_solo(r.prompt_tokens, r.max_tokens, r.sampling, r.stop,
                                         r.stop_tokens, r.ignore_eos, r.grammar, True, [])
                   for r in reqs]
        else:
            out = self._m.run(reqs)
        res = [_completion(d) for d in out]
        return res[0] if one else res

    def stream(self, prompt: Prompt, max_tokens: int = 16, **kw) -> Iterator[str]:
        """The text of one completion as it is generated (pieces of UTF-8 text)."""
        r = self._request(prompt, max_tokens, kw.pop("temperature", 0.0), kw.pop("top_p", 1.0),
                          kw.pop("top_k", 0), kw.pop("min_p", 0.0), kw.pop("seed", 0),
                          kw.pop("stop", None), kw.pop("stop_tokens", None),
                          kw.pop("ignore_eos", False), None, None, kw.pop("grammar", None),
                          kw.pop("json_schema", None), kw.pop("repetition_penalty", 1.0),
                          kw.pop("presence_penalty", 0.0), kw.pop("frequency_penalty", 0.0))
        if kw:
            raise TypeError("stream() got unexpected arguments: " + ", ".join(kw))
        s = self._m.stream(r)
        pending = b""
        try:
            while True:
                d = s.next()
                if d is None:
                    break
                for (_tok, text, _lp) in d["events"]:
                    pending += text
                    try:
                        piece, pending = pending.decode("utf-8"), b""
                    except UnicodeDecodeError:
                        continue
                    if piece:
                        yield piece
                if "finish_reason" in d:
                    pending += d["text"]
                    if pending:
                        yield _text(pending)
                    break
        finally:
            s.close()

    def chat(self, messages, max_tokens: Optional[int] = None, tools=None, tool_choice=None,
             response_format=None, template: str = "", **kw) -> Completion:
        """The assistant's reply to a conversation, through `tzero serve`'s own path: the
        messages as /v1/chat/completions takes them (roles system, developer, user, assistant,
        tool; content a string or text parts; assistant tool_calls), the chat template (the
        model's, or `template`: llama3, chatml, ...), `response_format` ({"type":
        "json_object"} or {"type": "json_schema", "json_schema": {"schema": {...}}}) and `tools`
        / `tool_choice` (OpenAI's shapes). max_tokens None: the rest of the context. With tools
        the Completion's .tool_calls lists {"id", "type", "function": {"name", "arguments"}}
        and .text is the content around them. Sampling keywords as generate()."""
        body = {"messages": list(messages)}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if tools is not None:
            body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if response_format is not None:
            body["response_format"] = response_format
        r, tool_format = self._m.chat_request(_json.dumps(body), template)
        base = self._request(list(r.prompt_tokens), r.max_tokens, kw.pop("temperature", 0.0),
                             kw.pop("top_p", 1.0), kw.pop("top_k", 0), kw.pop("min_p", 0.0),
                             kw.pop("seed", 0), kw.pop("stop", None), kw.pop("stop_tokens", None),
                             kw.pop("ignore_eos", False), kw.pop("logprobs", None), None, None,
                             None, kw.pop("repetition_penalty", 1.0),
                             kw.pop("presence_penalty", 0.0), kw.pop("frequency_penalty", 0.0))
        if kw:
            raise TypeError("chat() got unexpected arguments: " + ", ".join(kw))
        base.grammar = r.grammar  # the response format's or the tool calls'
        c = _completion(self._m.run([base])[0])
        if tool_format:
            content, calls = _tzero.Model.split_tool_calls(tool_format, c.text)
            c.text = content
            c.tool_calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                            for (i, n, a) in calls]
            if c.tool_calls and c.finish_reason == "stop":
                c.finish_reason = "tool_calls"
        return c

    def embed(self, texts: Union[str, Sequence[str]], dimensions: int = 0):
        """L2-normalised embeddings (pooled as the model declares, else mean): a numpy array
        (n, dim), or (dim,) for one text."""
        import numpy as np

        one = isinstance(texts, str)
        reqs = []
        for t in ([texts] if one else list(texts)):
            r = _tzero.RequestParams()
            r.prompt_tokens = self.tokenize(t)
            r.embedding = True
            r.embedding_dims = int(dimensions)
            reqs.append(r)
        vecs = np.stack([d["embedding"] for d in self._m.run(reqs)])
        return vecs[0] if one else vecs

    def score(self, prompt: str, continuation: str):
        """The log-probability of `continuation` after `prompt` (the sum over its tokens) and
        whether every one of its tokens is the greedy choice: (logprob, is_greedy), as
        evaluation harnesses compute log-likelihood."""
        ctx = self.tokenize(prompt)
        whole = ctx + self.tokenize(continuation, add_bos=False)
        c = self.generate(whole, max_tokens=0, prompt_logprobs=1)
        lp, greedy = 0.0, True
        for (tok, l, rank, _top) in c.prompt_logprobs[len(ctx) - 1:]:
            lp += l
            greedy = greedy and rank == 1
        return lp, greedy

    def trace(self, prompt: Prompt, ops: Sequence[str] = ("*",), max_tokens: int = 1):
        """Every named intermediate matching the globs in `ops` ("blk.*.ffn_out",
        "result_norm", ...), per position: {name: numpy (positions, row_len)}."""
        ids = self.tokenize(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
        s = _tzero.SamplingParams()
        d = self._m.generate_solo(ids, int(max_tokens), s, [], [], False, "", False, list(ops))
        return d["trace"]

    # --- tokenizer ---------------------------------------------------------------------------

    def tokenize(self, text: str, add_bos: bool = True, special: bool = False) -> list:
        """Token ids; add_bos: the BOS the vocabulary asks for (the prompt rule)."""
        return list(self._m.tokenize(text, add_bos, special))

    def detokenize(self, ids: Sequence[int], special: bool = False) -> str:
        return _text(self._m.detokenize([int(t) for t in ids], special))

    def fingerprint(self) -> str:
        """The numerics fingerprint (`tzero fingerprint`): same fingerprint, same bits."""
        return self.info["fingerprint"]


def _tzero_binary() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.environ.get("TZERO_BINARY"), os.path.join(here, "..", "..", "tzero"),
                 shutil.which("tzero")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise Error("the tzero binary is not found (set TZERO_BINARY)")


def _cli(args: Sequence[str]) -> subprocess.CompletedProcess:
    p = subprocess.run([_tzero_binary(), *args], capture_output=True, text=True)
    return p


def lock(model: str, prompts: str, out: str, *extra: str) -> str:
    """`tzero lock PROMPTS -m MODEL -o OUT`: records every request's answer and digest.
    Returns what it printed; raises Error with its message when it fails."""
    p = _cli(["lock", prompts, "-m", model, "-o", out, *extra])
    if p.returncode != 0:
        raise Error(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "tzero lock failed")
    return p.stdout


def verify(lock_file: str, *extra: str) -> bool:
    """`tzero verify LOCK`: True when every answer is reproduced bit for bit."""
    p = _cli(["verify", lock_file, *extra])
    if p.returncode not in (0, 1):
        raise Error(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "tzero verify failed")
    return p.returncode == 0


__all__ = ["LLM", "Completion", "Error", "RequestError", "lock", "verify"]
