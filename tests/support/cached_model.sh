# Sourced by the optional test scripts (tests/load/run_load.sh, tests/replica/run_replica.sh):
#   cached_model TZERO_BIN OVERRIDE CACHE_DIR   prints the model path to use: OVERRIDE when set,
# otherwise CACHE_DIR/110m-q8_0.gguf, made with gen-model when missing or older than the binary.
# Returns non-zero (after a message on stderr) when gen-model fails.
cached_model() {
  local tz=$1 override=$2 cache=$3
  if [ -n "$override" ]; then echo "$override"; return 0; fi
  local model=$cache/110m-q8_0.gguf
  if [ ! -f "$model" ] || [ "$model" -ot "$tz" ]; then
    mkdir -p "$cache"
    echo "== tzero gen-model --preset 110m --dtype q8_0 -o $model" >&2
    "$tz" gen-model --preset 110m --dtype q8_0 -o "$model.tmp" --force >/dev/null &&
      mv "$model.tmp" "$model" || { echo "gen-model failed" >&2; return 1; }
  fi
  echo "$model"
}
