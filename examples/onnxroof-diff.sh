#!/usr/bin/env bash
# The diff step of action.yml, runnable by hand: diff every model in $MODELS (default: the .onnx
# files changed since $BASE_REF) against its version at $BASE_REF, on $TARGETS, with $BUDGETS
# (one --fail-if budget per line), into $OUT/comment.md and $OUT/*.diff.html. Writes status=N and
# comment=PATH to $GITHUB_OUTPUT and the comment to $GITHUB_STEP_SUMMARY when they are set.
set -u
OUT="${OUT:-onnxroof-out}"
mkdir -p "$OUT"
comment="$OUT/comment.md"
echo "<!-- onnxroof-diff -->" > "$comment"
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
budgets=()
while IFS= read -r budget; do
  [ -n "$budget" ] && budgets+=(--fail-if "$budget")
done <<< "${BUDGETS:-}"
models="${MODELS:-}"
if [ -z "$models" ]; then
  models=$(git diff --name-only --diff-filter=AM "${BASE_REF:?set BASE_REF or MODELS}" HEAD -- '*.onnx')
fi
status=0
for model in $models; do
  name=$(echo "$model" | tr '/' '_')
  base="$model"  # a new model is diffed against itself: the comment shows its totals
  if [ -n "${BASE_REF:-}" ] && git cat-file -e "$BASE_REF:$model" 2>/dev/null; then
    base="$OUT/base/$model"  # the same file name: the comment names the model once
    mkdir -p "$(dirname "$base")"
    git show "$BASE_REF:$model" > "$base"
  fi
  rc=0
  onnxroof diff "$base" "$model" "${targets[@]}" "${budgets[@]}" --format markdown -q >> "$comment" || rc=$?
  onnxroof diff "$base" "$model" "${targets[@]}" --format html -o "$OUT/$name.diff.html" -q || true
  if [ "$rc" -gt "$status" ]; then status=$rc; fi
  echo "" >> "$comment"
done
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "status=$status" >> "$GITHUB_OUTPUT"
  echo "comment=$comment" >> "$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$comment" >> "$GITHUB_STEP_SUMMARY"; fi
exit 0
