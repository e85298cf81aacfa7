#!/usr/bin/env bash
# The diff step of action.yml, runnable by hand: diff every model in $MODELS (default: the .onnx
# files changed since $BASE_REF) against its version at $BASE_REF, on $TARGETS, with $BUDGETS
# (one --fail-if budget per line), into $OUT/comment.md and $OUT/*.diff.html.
#
# Flags for the analysis: $OPTIONS for every model (e.g. `--dim sequence=128 --batch 1`) and
# $MODEL_OPTIONS for some, one `PATH: FLAGS` line each (PATH may be a glob, `*` matching across
# folders; every line that matches a model adds its flags, after $OPTIONS). Both are read as a
# shell reads words (quotes group, nothing is expanded or run).
#
# The comment lists every model with its outcome (budgets hold, a budget broken, or the error
# that stopped its analysis), then each model's diff or error. Writes status=N, summary=LINE and
# comment=PATH to $GITHUB_OUTPUT and the comment to $GITHUB_STEP_SUMMARY when they are set, and
# exits with the status: 0 every model analysed and every budget holds, 1 a budget is broken,
# 2 a model could not be analysed (or the options are malformed), 3 onnxroof failed internally.
set -u
OUT="${OUT:-onnxroof-out}"
mkdir -p "$OUT"
comment="$OUT/comment.md"
body="$OUT/.comment-body.md"
: > "$body"
python=$(command -v python3 || command -v python)

targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
budgets=()
while IFS= read -r budget; do
  [ -n "$budget" ] && budgets+=(--fail-if "$budget")
done <<< "${BUDGETS:-}"

# The flags $OPTIONS and $MODEL_OPTIONS give the model $1, one per line of a NUL-separated list;
# a malformed line is a one-line error on stderr and exit 2.
model_flags() {
  OPTIONS="${OPTIONS:-}" MODEL_OPTIONS="${MODEL_OPTIONS:-}" "$python" - "$1" <<'PY'
import fnmatch, os, shlex, sys

model = sys.argv[1]
OWN = ("--format", "-o", "--output", "--symbolic")  # what the script sets itself


def words(text, where):
    try:
        found = shlex.split(text, comments=True)
    except ValueError as exc:
        sys.exit(f"{where}: {exc}: close the quote")
    for word in found:
        if word.split("=", 1)[0] in OWN:
            sys.exit(f"{where}: {word.split('=', 1)[0]} is set by the action itself: drop it")
    return found


flags = words(os.environ["OPTIONS"], "the options input")
for number, line in enumerate(os.environ["MODEL_OPTIONS"].splitlines(), 1):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    pattern, colon, rest = line.partition(":")
    if not colon or not pattern.strip():
        sys.exit(f"the model-options input, line {number} ({line.strip()!r}): write it as PATH: FLAGS, "
                 "e.g. models/encoder.onnx: --dim sequence=128")
    extra = words(rest, f"the model-options input, line {number}")
    if fnmatch.fnmatchcase(model, pattern.strip()):
        flags += extra
sys.stdout.write("".join(f"{flag}\0" for flag in flags))
PY
}

# text as HTML inside the comment: a model's path or an error can hold any character
escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/|/\&#124;/g'; }

models="${MODELS:-}"
if [ -z "$models" ]; then
  models=$(git diff --name-only --diff-filter=AM "${BASE_REF:?set BASE_REF or MODELS}" HEAD -- '*.onnx')
fi
status=0
total=0
rows=""
failed=""
broke=""
for model in $models; do
  total=$((total + 1))
  name=$(echo "$model" | tr '/' '_')
  shown=$(printf '%s' "$model" | escape)
  base="$model"  # a new model is diffed against itself: the comment shows its totals
  new=$([ -n "${BASE_REF:-}" ] && echo " (new)")
  if [ -n "${BASE_REF:-}" ] && git cat-file -e "$BASE_REF:$model" 2>/dev/null; then
    base="$OUT/base/$model"  # the same file name: the comment names the model once
    mkdir -p "$(dirname "$base")"
    git show "$BASE_REF:$model" > "$base"
    new=""
  fi
  flags=()
  rc=0
  if ! model_flags "$model" > "$OUT/.flags" 2> "$OUT/.stderr"; then
    rc=2
    sed -e 's/^/onnxroof: error: /' "$OUT/.stderr" > "$OUT/.error"
  else
    while IFS= read -r -d '' flag; do flags+=("$flag"); done < "$OUT/.flags"
    onnxroof diff "$base" "$model" "${flags[@]}" "${targets[@]}" "${budgets[@]}" --format markdown -q \
      > "$OUT/.diff.md" 2> "$OUT/.error" || rc=$?
  fi
  case "$rc" in
    0) outcome=$([ ${#budgets[@]} -gt 0 ] && echo "✅ budgets hold$new" || echo "✅ analysed$new") ;;
    1) outcome="❌ a budget is broken$new"; broke="$broke $model" ;;
    2) outcome="⚠️ could not be analysed$new"; failed="$failed $model" ;;
    *) outcome="⚠️ onnxroof failed (exit $rc)"; failed="$failed $model" ;;
  esac
  rows="$rows| <code>$shown</code> | $outcome |"$'\n'
  printf '**<code>%s</code>**: %s\n\n' "$shown" "$outcome" >> "$body"
  if [ "$rc" -le 1 ]; then
    cat "$OUT/.diff.md" >> "$body"
    onnxroof diff "$base" "$model" "${flags[@]}" "${targets[@]}" --format html -o "$OUT/$name.diff.html" -q || true
  else
    error=$(grep -v '^onnxroof: warning' "$OUT/.error")
    # the error names the base copy by its own path: name it as the model's base version
    [ "$base" = "$model" ] || error=${error//"$base"/"$model (its base version)"}
    [ -n "$error" ] || error="onnxroof: exited $rc without a message"
    printf '%s\n' "$error" >&2
    { printf '<pre>'; printf '%s\n' "$error" | escape; printf '</pre>\n'; } >> "$body"
    if grep -q -e 'add: --' -e '--dim' -e '--input-shape' "$OUT/.error"; then
      printf 'Give the flags it asks for in the action'"'"'s `model-options` input, a line `%s: FLAGS`, or in `options` for every model.\n' \
        "$shown" >> "$body"
    fi
  fi
  echo "" >> "$body"
  if [ "$rc" -gt "$status" ]; then status=$rc; fi
done
[ "$status" -gt 3 ] && status=3

if [ "$total" -eq 0 ]; then
  summary="onnxroof: no model to diff"
else
  summary="onnxroof: $total model(s)"
  [ -n "$failed" ] && summary="$summary; not analysed:$failed"
  [ -n "$broke" ] && summary="$summary; a budget broken:$broke"
  [ -z "$failed$broke" ] && summary="$summary; every one analysed, every budget holds"
fi
{
  echo "<!-- onnxroof-diff -->"
  if [ "$total" -eq 0 ]; then
    echo "onnxroof: no .onnx file to diff."
  else
    printf '## onnxroof: %s model(s)\n\n| model | outcome |\n| --- | --- |\n%s\n' "$total" "$rows"
    cat "$body"
  fi
} > "$comment"
rm -f "$body" "$OUT/.flags" "$OUT/.stderr" "$OUT/.error" "$OUT/.diff.md"
echo "$summary" >&2

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "status=$status" >> "$GITHUB_OUTPUT"
  echo "summary=$summary" >> "$GITHUB_OUTPUT"
  echo "comment=$comment" >> "$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$comment" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$status"
