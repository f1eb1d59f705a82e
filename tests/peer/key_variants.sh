#!/usr/bin/env bash
# make test-peer-keys: the key table (docs/MODELS.md) against llama.cpp. Writes gen-model presets
# with hyper-parameters other than the presets' (tests/peer/gguf_set.py: gemma3 and gemma2
# sliding-window periods and bases, gemma3 without a window and with logit soft-capping, YaRN,
# rope.scale_linear without a type, per-layer arrays; gpt-oss's window, glm4moe's groups, and
# deepseek2's softmax routing and plain rope; qwen3next's rotary, base and k, qwen35's real IMROPE
# sections, qwen35moe's epsilon and linear rope; nemotron_h's two epsilons) and runs tests/peer/run_peer.sh on them:
# tokens equal up to near-ties, logits within tolerance, KV cache f32.
#
#   tests/peer/key_variants.sh TZERO_BIN
set -u -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 TZERO_BIN" >&2; exit 2; }
TZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${PEER_CACHE:-$(dirname "$TZ")/peer-cache}/keys
mkdir -p "$OUT"
gen() { [ -f "$OUT/$1.gguf" ] || "$TZ" gen-model --preset "$1" -o "$OUT/$1.gguf" >/dev/null || exit 2; }
variant() {  # NAME PRESET EDITS...
  local name=$1 preset=$2
  shift 2
  gen "$preset"
  python3 "$HERE/gguf_set.py" "$OUT/$preset.gguf" "$OUT/$name.gguf" "$@" || exit 2
  MODELS="$MODELS $OUT/$name.gguf"
}
MODELS=""
variant g3-window4-period3-swabase5e4-cap20 tiny-gemma3 gemma3.attention.sliding_window=u32:4 \
  gemma3.attention.sliding_window_pattern=u32:3 gemma3.rope.freq_base_swa=f32:50000 \
  gemma3.final_logit_softcapping=f32:20
variant g3-no-window tiny-gemma3 -gemma3.attention.sliding_window
variant g3-window3-period0 tiny-gemma3 gemma3.attention.sliding_window=u32:3 \
  gemma3.attention.sliding_window_pattern=u32:0
variant g2-window3-period3-swabase3e4 tiny-gemma2 gemma2.attention.sliding_window=u32:3 \
  gemma2.attention.sliding_window_pattern=u32:3 gemma2.rope.freq_base_swa=f32:30000
variant qwen2-yarn4-orig64 tiny-qwen2 qwen2.rope.scaling.type=str:yarn qwen2.rope.scaling.factor=f32:4 \
  qwen2.rope.scaling.original_context_length=u32:64
variant qwen3-yarn8-attn0.9 tiny-qwen3 qwen3.rope.scaling.type=str:yarn qwen3.rope.scaling.factor=f32:8 \
  qwen3.rope.scaling.attn_factor=f32:0.9 qwen3.rope.freq_base=f32:500000
variant llama-scale-linear3 tiny llama.rope.scale_linear=f32:3
variant llama-factor2-no-type tiny llama.rope.scaling.factor=f32:2
variant llama-none-ignores-factor tiny llama.rope.scaling.type=str:none llama.rope.scaling.factor=f32:4
variant qwen3-head-arrays tiny-qwen3 qwen3.attention.head_count=i32[]:4,4 \
  qwen3.attention.head_count_kv=i32[]:2,2 qwen3.feed_forward_length=i32[]:512,512
variant mixtral-k1 tiny-mixtral llama.expert_used_count=u32:1
variant gptoss-window4-period3-swabase5e4 tiny-gpt-oss gpt-oss.attention.sliding_window=u32:4 \
  gpt-oss.attention.sliding_window_pattern=u32:3 gpt-oss.rope.freq_base_swa=f32:50000
variant glm-groups4of2-scale1.5-nonorm tiny-glm4moe glm4moe.expert_group_count=u32:4 \
  glm4moe.expert_group_used_count=u32:2 glm4moe.expert_weights_norm=bool:false \
  glm4moe.expert_weights_scale=f32:1.5
variant ds-softmax-no-logmul tiny-deepseek2 deepseek2.expert_gating_func=u32:1 \
  -deepseek2.rope.scaling.yarn_log_multiplier deepseek2.expert_weights_norm=bool:false
variant ds-no-groups-no-yarn tiny-deepseek2 deepseek2.expert_group_count=u32:1 \
  deepseek2.expert_group_used_count=u32:1 deepseek2.rope.scaling.type=str:none
variant qnext-rot8-base1e4-k2 tiny-qwen3next qwen3next.rope.dimension_count=u32:8 \
  qwen3next.rope.freq_base=f32:10000 qwen3next.expert_used_count=u32:2
variant q35-sections-11-11-10-rot8 tiny-qwen35 qwen35.rope.dimension_sections=i32[]:11,11,10,0 \
  qwen35.rope.dimension_count=u32:8
variant q35moe-eps1e-5-linear2 tiny-qwen35moe qwen35moe.attention.layer_norm_rms_epsilon=f32:1e-5 \
  qwen35moe.rope.scaling.type=str:linear qwen35moe.rope.scaling.factor=f32:2
# nemotron_h: the RMS epsilon is the one its norms use; layer_norm_epsilon is read and unused.
variant nh-rms0.1-ln0.5 tiny-nemotron-h nemotron_h.attention.layer_norm_rms_epsilon=f32:0.1 \
  nemotron_h.attention.layer_norm_epsilon=f32:0.5
PEER_MODELS="$MODELS" PEER_PRESETS=" " PEER_STORIES=0 PEER_KV=${PEER_KV:-f32} PEER_N=${PEER_N:-24} \
  PEER_REPORT=${PEER_REPORT:-$(dirname "$TZ")/peer-keys-report.json} \
  PEER_PROMPT=${PEER_PROMPT:-"Once upon a time there was a little girl who"} \
  "$HERE/run_peer.sh" "$TZ"
