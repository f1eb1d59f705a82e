#!/usr/bin/env bash
# Fuzzes the GGUF reader, the tokenizers, the chat templates, the grammars and the server's
# request parser for SECONDS seconds each: tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS
# (`make fuzz` builds BUILD_DIR with clang and -DTZ_FUZZ=ON, then calls this).
#
# The corpus lives in BUILD_DIR/fuzz-corpus and grows from run to run. Each run (re)seeds it
# with gen-model's tiny model (f32 and q4_0), ../shared/data's stories260K and vocabulary GGUF
# files when present (copied into the build directory, never into the repository), shrunk
# copies of all of those, and micro models that construct a Model within -max_len.
# Exits non-zero when the fuzzer finds a crash, leak, timeout or out-of-memory; the input
# that triggered it is left in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$1
seconds=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
fuzzer=$build/tests/fuzz/tz_fuzz_gguf
tzero=$build/tzero
for bin in "$fuzzer" "$tzero"; do
  if [ ! -x "$bin" ]; then
    echo "run_fuzz.sh: $bin is not built (make fuzz-build)" >&2
    exit 2
  fi
done

corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"

# Seeds. Inputs longer than -max_len are cut to it by libFuzzer; the shrunk and micro seeds
# keep whole files (every tensor in range, a Model that loads) inside it.
"$tzero" gen-model --preset tiny --dtype f32 -o "$corpus/tiny-f32.gguf" 2>/dev/null
"$tzero" gen-model --preset tiny --dtype q4_0 -o "$corpus/tiny-q4_0.gguf" 2>/dev/null
"$tzero" gen-model --preset tiny-gemma3 --dtype q8_0 -o "$corpus/tiny-gemma3-q8_0.gguf" 2>/dev/null
"$tzero" gen-model --preset tiny-phi3 --dtype q4_k_m -o "$corpus/tiny-phi3-q4_k_m.gguf" 2>/dev/null
shared=$repo/../shared/data
for f in "$shared/gguf/stories260K.gguf" "$shared"/vocab/*.gguf; do
  if [ -f "$f" ]; then cp -f "$f" "$corpus/"; fi
done
TZ_FUZZ_WRITE_SEEDS=$corpus "$fuzzer" 2>"$build/fuzz-seeds.log" || {
  cat "$build/fuzz-seeds.log" >&2
  echo "run_fuzz.sh: writing the seeds failed" >&2
  exit 1
}

# Tokens the format is made of: mutations splice them in.
dict=$build/fuzz-gguf.dict
cat >"$dict" <<'DICT'
"GGUF"
"\x03\x00\x00\x00"
"\x02\x00\x00\x00"
"general.architecture"
"general.alignment"
"general.name"
"llama"
"qwen2"
"qwen3"
"mistral"
".embedding_length"
".block_count"
".attention.head_count"
".attention.head_count_kv"
".attention.key_length"
".feed_forward_length"
".rope.dimension_count"
".rope.freq_base"
".rope.scaling.type"
"tokenizer.ggml.model"
"tokenizer.ggml.tokens"
"tokenizer.ggml.scores"
"tokenizer.ggml.token_type"
"tokenizer.ggml.bos_token_id"
"tokenizer.ggml.eos_token_id"
"tokenizer.ggml.add_bos_token"
"token_embd.weight"
"output_norm.weight"
"output.weight"
"blk.0.attn_q.weight"
"<0x41>"
"\xff\xff\xff\xff\xff\xff\xff\xff"
"\x00\x00\x00\x00\x00\x00\x00\x40"
DICT

log=$build/fuzz.log
echo "fuzzing the GGUF reader for ${seconds}s (corpus $corpus, log $log)"
set +e
# -malloc_limit_mb: any single allocation that large is a finding (the reader must size
# allocations by what the file can hold). -timeout: one input taking 10 s is a hang.
"$fuzzer" "$corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=3072 \
  -malloc_limit_mb=1024 -dict="$dict" -use_value_profile=1 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" >"$log" 2>&1
rc=$?
set -e
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
grep -E '^stat::' "$log" || true
if [ $rc -ne 0 ]; then
  tail -n 60 "$log" >&2
  echo "run_fuzz.sh: the fuzzer failed (exit $rc); reproducer(s) in $artifacts:" >&2
  ls -l "$artifacts" >&2
  exit 1
fi
echo "no crash in ${seconds}s; corpus: $(find "$corpus" -type f | wc -l) files"

# One more fuzzer for SECONDS: run_more NAME BINARY CORPUS MAX_LEN [DICT] (exits on a finding).
run_more() {
  local name=$1 fuzzer=$2 corpus_dir=$3 max_len=$4 log=$build/fuzz-$1.log rc
  local dict_arg=()
  if [ $# -ge 5 ]; then dict_arg=(-dict="$5"); fi
  set +e
  "$fuzzer" "$corpus_dir" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
    "${dict_arg[@]}" >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
  if [ $rc -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "run_fuzz.sh: the $name fuzzer failed (exit $rc); reproducer(s) in $artifacts" >&2
    exit 1
  fi
  echo "$name: no crash in ${seconds}s"
}

# The tokenizers: encode/decode of arbitrary bytes with every vocabulary (a round-trip failure
# is a finding too).
tok_corpus=$build/fuzz-corpus-tokenizer
mkdir -p "$tok_corpus"
printf 'Hello world' >"$tok_corpus/hello"
printf ' \t\n  spaces\r\n and <s> control </s> tokens' >"$tok_corpus/space"
printf 'ied 4 \xc2\xbd months \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\xa6\x99 \xff\xfe bad utf-8' >"$tok_corpus/utf8"
if [ -f "$shared/text/tinyshakespeare.txt" ]; then head -c 2000 "$shared/text/tinyshakespeare.txt" >"$tok_corpus/shakespeare"; fi
run_more tokenizer "$build/tests/fuzz/tz_fuzz_tokenizer" "$tok_corpus" 4096

# Chat templates: arbitrary template text parsed and rendered, seeded with two formats and
# nests near the limits.
tpl_corpus=$build/fuzz-corpus-chat-template
mkdir -p "$tpl_corpus"
printf '%s' "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}" >"$tpl_corpus/chatml"
printf '%s' "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content | trim }} [/INST]{% else %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}" >"$tpl_corpus/mistral"
python3 -c "print('{{ ' + '('*300 + '1' + ')'*300 + ' }}', end='')" >"$tpl_corpus/deep-parens"
python3 -c "print('{{ 1' + ' + 1'*400 + ' }}', end='')" >"$tpl_corpus/long-chain"
run_more chat-template "$build/tests/fuzz/tz_fuzz_chat_template" "$tpl_corpus" 8192

# Grammars (first byte even: GBNF, a NUL, then text to match) and JSON schemas (first byte odd).
gr_corpus=$build/fuzz-corpus-grammar
mkdir -p "$gr_corpus"
printf '\x00root ::= "{" ws ( [a-z]+ ":" ws value ( "," ws [a-z]+ ":" ws value )* )? "}"\nvalue ::= [0-9]{1,5} | "[" ws ( value ( "," ws value )* )? "]" | root\nws ::= | " "\n\x00{a: [1, 22,[]], b:{}}' >"$gr_corpus/gbnf"
printf '\x00root ::= ("ab" | "c")* [^x-z\\u00e9]{2,4} "\\U0001F600"?\x00ababcc\xc3\xa9\xf0\x9f\x98\x80' >"$gr_corpus/gbnf-utf8"
printf '\x01{"type": "object", "properties": {"a": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^x[a-f]{1,3}$"}, {"type": "boolean"}, {"type": "null"}]}, "maxItems": 6}, "b": {"$ref": "#/$defs/B"}}, "required": ["a"], "$defs": {"B": {"type": "object", "properties": {"c": {"type": "string", "format": "date"}, "d": {"type": "integer", "minimum": -5, "maximum": 120}}}}}' >"$gr_corpus/schema"
run_more grammar "$build/tests/fuzz/tz_fuzz_grammar" "$gr_corpus" 8192

# The server's request parser (first byte: route and formats, request_fuzz.cpp; then the JSON
# body): seeded with tools and tool turns, structured output of every kind, scoring and extension
# fields, and nesting at the limit (kMaxJsonDepth, 256) and one past it.
req_corpus=$build/fuzz-corpus-request
mkdir -p "$req_corpus"
printf '\x05%s' '{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Time?"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_time","arguments":"{\"tz\":[\"UTC\",{\"a\":1.5}]}"}}]},{"role":"tool","tool_call_id":"c1","content":"noon"}],"tools":[{"type":"function","function":{"name":"get_time","description":"now","parameters":{"type":"object","properties":{"tz":{"type":"string","enum":["UTC","CET"]}},"required":["tz"]}}}],"tool_choice":"auto","parallel_tool_calls":true,"max_tokens":8}' >"$req_corpus/chat-tools"
printf '\x03%s' '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":-5,"maximum":120}}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}' >"$req_corpus/chat-named-llama3"
printf '\x01%s' '{"messages":[{"role":"developer","content":"x"},{"role":"user","content":"y"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","strict":true,"schema":{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"number"},{"type":"string","pattern":"^x[a-f]{1,3}$"},{"type":"null"}]},"maxItems":4},"b":{"$ref":"#/$defs/B"}},"required":["a"],"$defs":{"B":{"type":"string","format":"date"}}}}},"logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},"metadata":{"k":"v"},"store":false}' >"$req_corpus/chat-schema"
printf '\x00%s' '{"prompt":"The quick brown fox","echo":true,"logprobs":20,"max_tokens":0,"temperature":0,"seed":1234,"n":2,"best_of":2,"prompt_logprobs":5,"stop":["\n","."],"logit_bias":{}}' >"$req_corpus/score"
printf '\x08%s' '{"prompt":[[1,2,3]],"guided_json":"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"boolean\"}}}","n_predict":-1,"n_probs":2,"repeat_penalty":1.1,"repeat_last_n":64,"samplers":"kfypmt","stop_token_ids":[2],"cache_prompt":true,"typical_p":1,"mirostat":0,"input":["a",[1,2]]}' >"$req_corpus/extensions"
printf '\x00%s' '{"prompt":"x","grammar":"root ::= (\"a\" | [b-d]+)* \"!\"","tzero_resume":{"tokens":[5,6]}}' >"$req_corpus/grammar-resume"
printf '\x00%s' '{"prompt":"x","guided_choice":["yes","no"],"top_k":-1,"min_p":0.1}' >"$req_corpus/choice"
python3 -c "d=254; print('\x01{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"metadata\":{\"k\":' + '['*d + ']'*d + '}}', end='')" >"$req_corpus/deep-at-limit"
python3 -c "d=257; print('\x05{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"' + '['*d + ']'*d + '\"}}]}]}', end='')" >"$req_corpus/deep-arguments"
printf '\x01%s' '<tool_call>
{"name": "get_time", "arguments": {"tz": "UTC"}}
</tool_call>' >"$req_corpus/reply-hermes"
req_dict=$build/fuzz-request.dict
cat >"$req_dict" <<'DICT'
"\"messages\""
"\"role\""
"\"content\""
"\"assistant\""
"\"tool\""
"\"tool_calls\""
"\"tool_call_id\""
"\"function\""
"\"arguments\""
"\"parameters\""
"\"tools\""
"\"tool_choice\""
"\"response_format\""
"\"json_schema\""
"\"schema\""
"\"guided_json\""
"\"guided_choice\""
"\"grammar\""
"\"logit_bias\""
"\"logprobs\""
"\"top_logprobs\""
"\"echo\""
"\"prompt\""
"\"max_tokens\""
"\"stream\""
"\"metadata\""
"\"type\""
"\"properties\""
"\"items\""
"\"$ref\""
"\"anyOf\""
"<tool_call>"
"</tool_call>"
"[[[[[[[["
"{\"a\":{\"a\":"
DICT
run_more request "$build/tests/fuzz/tz_fuzz_request" "$req_corpus" 8192 "$req_dict"
