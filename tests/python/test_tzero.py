# The Python package against the real binary on the same model file: the same request gives the
# digest `tzero run` prints, logits arrays are bit-equal to --logits-out, a batch gives each prompt
# its solo bits, bad input raises clear exceptions. Bits are compared as bytes, never with a
# tolerance.
import json
import signal
import threading

import numpy as np
import pytest

import tzero
from conftest import run_cli

PROMPTS = ["Once upon a time", "The quick brown fox", "In a hole in the ground there lived"]


def run_json(tzero_bin, model_path, prompt, *extra):
    p = run_cli(tzero_bin, "run", "-m", model_path, "-p", prompt, "--json", "-t", "1", *extra)
    return json.loads(p.stdout)


def test_generate_matches_tzero_run(llm, tzero_bin, model_path):
    for prompt in PROMPTS:
        want = run_json(tzero_bin, model_path, prompt, "-n", "12")
        got = llm.generate(prompt, max_tokens=12)
        assert got.tokens == want["tokens"]
        assert got.prompt_tokens == want["prompt_tokens"]
        assert got.text == want["text"]
        assert got.logits_digest == want["logits_digest"]
        assert got.stop_reason == want["stop_reason"]


def test_seeded_sampling_matches_tzero_run(llm, tzero_bin, model_path):
    want = run_json(tzero_bin, model_path, PROMPTS[0], "-n", "10", "--temp", "0.9", "--seed", "7",
                    "--top-k", "40")
    got = llm.generate(PROMPTS[0], max_tokens=10, temperature=0.9, seed=7, top_k=40)
    assert got.tokens == want["tokens"]
    assert got.logits_digest == want["logits_digest"]


def test_logits_bit_equal_to_logits_out(llm, tzero_bin, model_path, tmp_path):
    out = tmp_path / "logits.bin"
    run_cli(tzero_bin, "run", "-m", model_path, "-p", PROMPTS[1], "-n", "5", "--logits-out",
            str(out))
    got = llm.generate(PROMPTS[1], max_tokens=5, return_logits=True)
    assert got.logits.dtype == np.float32
    assert got.logits.shape == (5, llm.info["n_vocab"])
    assert got.logits.tobytes() == out.read_bytes()


def test_batch_gives_each_prompt_its_solo_bits(llm):
    solo = [llm.generate(p, max_tokens=8, logprobs=2) for p in PROMPTS]
    batch = llm.generate(PROMPTS, max_tokens=8, logprobs=2)
    assert len(batch) == len(PROMPTS)
    for a, b in zip(solo, batch):
        assert a.tokens == b.tokens
        assert a.logits_digest == b.logits_digest
        assert np.array(a.logprobs, np.float32).tobytes() == np.array(b.logprobs, np.float32).tobytes()
    # Token-id prompts are the same requests.
    ids = [llm.tokenize(p) for p in PROMPTS]
    by_ids = llm.generate(ids, max_tokens=8)
    assert [c.logits_digest for c in by_ids] == [c.logits_digest for c in solo]


@pytest.mark.parametrize("drafts", ["ngram", "model"])
def test_speculative_decoding_gives_the_same_bits(model_path, llm, drafts):
    if drafts == "ngram":
        spec = tzero.LLM(model_path, threads=2, speculative="ngram-simple", draft_max=4)
    else:  # the model as its own draft
        spec = tzero.LLM(model_path, threads=2, draft_model=model_path, draft_max=3)
    prompts = ["one two three one two three one", "a b a b a b a"] + PROMPTS
    for kw in ({}, {"temperature": 0.8, "seed": 3}):
        plain = llm.generate(prompts, max_tokens=24, ignore_eos=True, logprobs=1, **kw)
        got = spec.generate(prompts, max_tokens=24, ignore_eos=True, logprobs=1, **kw)
        for a, b in zip(plain, got):
            assert a.tokens == b.tokens
            assert a.logits_digest == b.logits_digest
            assert np.array(a.logprobs, np.float32).tobytes() == np.array(b.logprobs, np.float32).tobytes()
            assert a.drafted == 0 and 0 <= b.accepted <= b.drafted
            if drafts == "model" and not kw:  # its own greedy draft: every draft sampled
                assert b.accepted == b.drafted > 0
        assert sum(c.drafted for c in got) > 0
        # Through `tzero run`'s path too, with its logits rows.
        a = llm.generate(prompts[0], max_tokens=12, return_logits=True, **kw)
        b = spec.generate(prompts[0], max_tokens=12, return_logits=True, **kw)
        assert a.logits_digest == b.logits_digest
        assert a.logits.tobytes() == b.logits.tobytes()
        if drafts == "model":  # (prompt lookup may find nothing in 12 random-weight tokens)
            assert b.drafted > 0 and (kw or b.accepted == b.drafted)
    with pytest.raises(tzero.Error):
        tzero.LLM(model_path, speculative="draft-model")


def test_threads_do_not_change_bits(model_path, llm):
    one = tzero.LLM(model_path, threads=1, kernels="scalar")
    a = one.generate(PROMPTS[2], max_tokens=6)
    b = llm.generate(PROMPTS[2], max_tokens=6)
    assert a.logits_digest == b.logits_digest
    assert one.fingerprint() == llm.fingerprint()


def test_fingerprint_matches_cli(llm, tzero_bin, model_path):
    p = run_cli(tzero_bin, "fingerprint", "-m", model_path, "--json")
    assert llm.fingerprint() == json.loads(p.stdout)["fingerprint"]
    assert llm.fingerprint() in repr(llm)
    v = run_cli(tzero_bin, "--version").stdout
    assert tzero.__version__ in v


def test_stream_gives_the_text(llm):
    whole = llm.generate(PROMPTS[0], max_tokens=10)
    pieces = list(llm.stream(PROMPTS[0], max_tokens=10))
    assert "".join(pieces) == whole.text


def test_score_and_prompt_logprobs(llm):
    lp, greedy = llm.score("The quick brown", " fox")
    ctx = llm.tokenize("The quick brown")
    ids = ctx + llm.tokenize(" fox", add_bos=False)
    c = llm.generate(ids, max_tokens=0, prompt_logprobs=1)
    assert len(c.prompt_logprobs) == len(ids) - 1
    # The continuation's tokens: their logprobs summed in order, and greedy when each ranks 1.
    cont = c.prompt_logprobs[len(ctx) - 1:]
    assert [t for (t, _, _, _) in cont] == ids[len(ctx):]
    assert lp == sum(l for (_, l, _, _) in cont) and lp < 0
    assert greedy == all(rank == 1 for (_, _, rank, _) in cont)



def test_tokenize_roundtrip(llm):
    ids = llm.tokenize("Hello world", add_bos=False)
    assert llm.detokenize(ids) == "Hello world"
    assert llm.tokenize("Hello world")[0] == llm.info["bos"]


def test_embed_equals_tzero_embed(llm, tzero_bin, model_path, tmp_path):
    v = llm.embed(["a cat", "a dog"])
    assert v.shape == (2, llm.info["n_embd"])
    f = tmp_path / "lines.txt"
    f.write_text("a cat\na dog\n")
    want = json.loads(run_cli(tzero_bin, "embed", "-m", model_path, "-f", str(f), "--json").stdout)
    for i in range(2):  # JSON keeps every float32 exactly: bytes compared
        assert np.array(want["data"][i]["embedding"], np.float32).tobytes() == v[i].tobytes()
    assert llm.embed("a cat").tobytes() == v[0].tobytes()


def test_trace_gives_named_intermediates(llm):
    tr = llm.trace(PROMPTS[0], ops=["blk.0.*", "result_output"])
    assert "result_output" in tr
    n = len(llm.tokenize(PROMPTS[0]))
    assert any(k.startswith("blk.0.") for k in tr)
    for name, a in tr.items():
        # Per position in evaluation order; the output head runs on the last position only.
        assert a.dtype == np.float32 and a.shape[0] == (1 if name == "result_output" else n), name
    # The same request's logits row is the traced result_output's last row.
    g = llm.generate(PROMPTS[0], max_tokens=1, return_logits=True)
    assert tr["result_output"][-1].tobytes() == g.logits[0].tobytes()


def test_json_schema_constrains(llm):
    c = llm.generate("Answer:", max_tokens=40, json_schema={"type": "object", "properties": {
        "a": {"type": "integer"}}, "required": ["a"]})
    assert c.finish_reason == "stop", c  # the grammar completes on this model and prompt
    assert isinstance(json.loads(c.text)["a"], int)


def test_chat_matches_cli_messages(llm, tzero_bin, model_path, tmp_path):
    msgs = [{"role": "user", "content": "Hi there"}]
    f = tmp_path / "m.json"
    f.write_text(json.dumps(msgs))
    want = json.loads(run_cli(tzero_bin, "run", "-m", model_path, "--messages", str(f), "-n", "8",
                              "--json").stdout)
    got = llm.chat(msgs, max_tokens=8)
    assert got.tokens == want["tokens"]
    assert got.logits_digest == want["logits_digest"]


def test_bad_input_raises_clear_errors(llm, model_path):
    with pytest.raises(tzero.RequestError) as e:
        llm.generate([1, 2, 10 ** 7], max_tokens=2)
    assert e.value.param == "prompt" and "outside the vocabulary" in str(e.value)
    with pytest.raises(tzero.RequestError) as e:
        llm.generate("x", max_tokens=2, top_p=0.0)
    assert e.value.param == "top_p"
    with pytest.raises(tzero.RequestError) as e:
        llm.generate("x " * 5000, max_tokens=2)
    assert "longer than the context" in str(e.value)
    with pytest.raises(tzero.RequestError) as e:
        llm.generate("x", grammar="root ::= (")
    assert e.value.param == "grammar"
    with pytest.raises(tzero.Error) as e:
        tzero.LLM(model_path + ".missing")
    assert "missing" in str(e.value)
    with pytest.raises(tzero.Error):
        tzero.LLM(model_path, mode="fastest")
    # The model still answers after the refusals.
    assert llm.generate(PROMPTS[0], max_tokens=2).tokens


def test_ctrl_c_interrupts_a_call(model_path):
    big = tzero.LLM(model_path, threads=1, kernels="scalar")
    timer = threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        big.generate(["Once"] * 16, max_tokens=100000, ignore_eos=True)
    timer.cancel()
    # Usable afterwards, with the same bits (the cancelled requests end at its next step).
    assert big.generate(PROMPTS[0], max_tokens=3).logits_digest == \
        llm_digest(model_path, PROMPTS[0], 3)


def llm_digest(model_path, prompt, n):
    return tzero.LLM(model_path, threads=1).generate(prompt, max_tokens=n).logits_digest


def test_stream_closed_early_leaves_the_model_as_it_was(llm, model_path):
    s = llm.stream(PROMPTS[0], max_tokens=200, ignore_eos=True)
    next(s)
    s.close()
    other = llm.stream(PROMPTS[1], max_tokens=300, ignore_eos=True)
    next(other)  # open while the next calls run
    assert llm.generate(PROMPTS[2], max_tokens=6).logits_digest == \
        llm_digest(model_path, PROMPTS[2], 6)
    other.close()


def test_return_logits_honours_every_option(llm):
    eos = llm.info["eos"]
    a = llm.generate(PROMPTS[0], max_tokens=12, ignore_eos=True, stop_tokens=[eos])
    b = llm.generate(PROMPTS[0], max_tokens=12, ignore_eos=True, stop_tokens=[eos],
                     return_logits=True)
    assert a.tokens == b.tokens and a.logits_digest == b.logits_digest
    assert b.logits.shape[0] == len(b.tokens)


def test_lock_and_verify(tzero_bin, model_path, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": "Once", "max_tokens": 4}) + "\n")
    out = tmp_path / "l.json"
    tzero.lock(model_path, str(prompts), str(out))
    assert tzero.verify(str(out))


def test_chat_with_tools_and_response_format(model_path, llm):
    wide = tzero.LLM(model_path, threads=2, ctx=2048)  # the tools' system prompt is long
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}},
                       "required": ["city"]}}}]
    c = wide.chat([{"role": "user", "content": "Weather in Paris?"}], tools=tools,
                  tool_choice="required", max_tokens=120)
    # (a random model may go on calling until max_tokens: finish_reason tool_calls or length)
    assert c.finish_reason in ("tool_calls", "length") and c.tool_calls, c
    assert c.tool_calls[0]["function"]["name"] == "get_weather"
    assert json.loads(c.tool_calls[0]["function"]["arguments"])["city"] in ("Paris", "Rome")
    again = wide.chat([{"role": "user", "content": "Weather in Paris?"}], tools=tools,
                      tool_choice="required", max_tokens=120)
    assert again.logits_digest == c.logits_digest
    j = llm.chat([{"role": "user", "content": "A JSON object"}], max_tokens=60,
                 response_format={"type": "json_schema", "json_schema": {"schema": {
                     "type": "object", "properties": {"n": {"type": "integer"}},
                     "required": ["n"]}}})
    assert j.finish_reason == "stop", j
    assert isinstance(json.loads(j.text)["n"], int)
    with pytest.raises(tzero.RequestError) as e:
        llm.chat([{"role": "wizard", "content": "x"}])
    assert e.value.param == "messages[0].role"
