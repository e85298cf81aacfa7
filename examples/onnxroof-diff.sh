#!/usr/bin/env bash
# The diff step of action.yml, runnable by hand: diff every model in $MODELS (default: the .onnx
# files changed since $BASE_REF) against its version at $BASE_REF, on $TARGETS, with $BUDGETS
# (one --fail-if budget per line), into $OUT/comment.md and $OUT/*.diff.html.
#
# $MODELS is read as a shell reads words (quotes group: "my model.onnx"; nothing is expanded);
# the changed files come from git as a NUL-separated list, so any file name is one model. A model
# the pull request renamed is diffed against its base version at the old path ("renamed from OLD").
# A base version kept in Git LFS is read through `git lfs smudge`, not diffed as its pointer.
#
# Targets: the figures a budget is judged on must not be the pull request's to change. Unless
# $PR_TARGETS is "true", ./hardware in the checkout is not searched (ONNXROOF_CWD_TARGETS=0), the
# targets folder is the .toml files of hardware/ at $BASE_REF, and a target given as a file inside
# the repository is read as it is at $BASE_REF (a file the base does not have is an error); without
# $BASE_REF only the bundled targets (and files outside the repository) are used.
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

# A setup error (a malformed input): one line on stderr and in the comment, status 2, no model run.
setup_failed() {
  printf 'onnxroof: error: %s\n' "$1" >&2
  { echo "<!-- onnxroof-diff -->"; printf '<pre>'; printf 'onnxroof: error: %s\n' "$1" | escape; printf '</pre>\n'; } > "$comment"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    { echo "status=2"; printf 'summary=onnxroof: %s\n' "$(plain "$1")"; echo "comment=$comment"; } >> "$GITHUB_OUTPUT"
  fi
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$comment" >> "$GITHUB_STEP_SUMMARY"; fi
  rm -f "$body"
  exit 2
}

# $1 (text) read as a shell reads words, one per line of a NUL-separated list on stdout
words() {
  TEXT="$1" "$python" -c '
import os, shlex, sys
try:
    found = shlex.split(os.environ["TEXT"])
except ValueError as exc:
    sys.exit(f"{exc}: close the quote")
sys.stdout.write("".join(f"{word}\0" for word in found))'
}

# text as HTML inside the comment: a model's path or an error can hold any character
escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/|/\&#124;/g'; }
# $1 (a model's path) on one line, its control characters but tab as '?' (as every output shows them): a
# name with a newline would break the comment's table row, and in $GITHUB_OUTPUT's summary it
# would add lines of its own (a pull request's "status=0" after the real status)
plain() { printf '%s' "$1" | tr '\000-\010\012-\037\177' '?'; }

trusted="$OUT/.trusted-targets"
if [ "${PR_TARGETS:-false}" != "true" ]; then
  export ONNXROOF_CWD_TARGETS=0  # the checkout's ./hardware is the pull request's
  rm -rf "$trusted"
  mkdir -p "$trusted/files"
  ONNXROOF_TARGETS=$(cd "$trusted" && pwd)
  export ONNXROOF_TARGETS
  if [ -n "${BASE_REF:-}" ]; then  # the base commit's hardware/*.toml: regular files only
    while IFS= read -r -d '' entry; do
      read -r mode kind object <<< "${entry%%$'\t'*}"
      file=${entry#*$'\t'}
      case "$mode $kind $file" in
        "100644 blob "*.toml | "100755 blob "*.toml) git cat-file blob "$object" > "$trusted/$(basename "$file")" ;;
      esac
    done < <(git ls-tree -z "$BASE_REF" -- hardware/ 2>/dev/null)
  fi
fi

targets=()
words "${TARGETS:-}" > "$OUT/.targets" 2> "$OUT/.stderr" || setup_failed "the targets input: $(cat "$OUT/.stderr")"
number=0
while IFS= read -r -d '' target; do
  number=$((number + 1))
  if [ "${PR_TARGETS:-false}" != "true" ] && { [[ "$target" == */* ]] || [[ "$target" == *.toml ]] || [ -e "$target" ]; }; then
    # relative to the checkout, a link not followed (its own name is read at the base commit)
    inside=$("$python" -c 'import os, sys; print(os.path.relpath(os.path.abspath(sys.argv[1])))' "$target")
    if [[ "$inside" != ../* ]]; then  # a file of the repository: as it is at the base commit
      if [ -z "${BASE_REF:-}" ] || ! git cat-file -e "$BASE_REF:./$inside" 2>/dev/null; then
        setup_failed "the targets input: $target is a file of the pull request's checkout, which is not read unless the workflow sets pr-targets: true; $([ -n "${BASE_REF:-}" ] && echo "base-ref does not have it" || echo "there is no base-ref to read it from")"
      fi
      copy="$trusted/files/$number-$(basename -- "$inside")"
      git show "$BASE_REF:./$inside" > "$copy"
      target=$copy
    fi
  fi
  targets+=(--target "$target")
done < "$OUT/.targets"
budgets=()
while IFS= read -r budget; do
  [ -n "$budget" ] && budgets+=(--fail-if "$budget")
done <<< "${BUDGETS:-}"

# The flags $OPTIONS and $MODEL_OPTIONS give the model $1, one per line of a NUL-separated list;
# a malformed line is a one-line error on stderr and exit 2.
model_flags() {
  OPTIONS="${OPTIONS:-}" MODEL_OPTIONS="${MODEL_OPTIONS:-}" PR_TARGETS="${PR_TARGETS:-false}" "$python" - "$1" <<'PY'
import fnmatch, os, shlex, sys

model = sys.argv[1]
OWN = ("--format", "-o", "--output", "--symbolic")  # what the script sets itself


def words(text, where):
    try:
        found = shlex.split(text, comments=True)
    except ValueError as exc:
        sys.exit(f"{where}: {exc}: close the quote")
    for word in found:
        flag = word.split("=", 1)[0]
        if flag in OWN:
            sys.exit(f"{where}: {flag} is set by the action itself: drop it")
        # --target (or its abbreviation) here would read the pull request's file: targets are the targets input's
        if os.environ["PR_TARGETS"] != "true" and len(flag) > 3 and "--target".startswith(flag):
            sys.exit(f"{where}: give targets in the targets input, which reads them from base-ref, not with {flag}")
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

# The models changed since $BASE_REF, renames found: a model moved (and perhaps edited) is diffed
# against its base version at the old path (renamed_from), not shown as new.
declare -A renamed_from=()
changed=()
if [ -n "${BASE_REF:-}" ]; then
  git diff -z --name-status -M --diff-filter=AMR "$BASE_REF" HEAD -- '*.onnx' > "$OUT/.changed" 2> "$OUT/.stderr" \
    || setup_failed "git diff $BASE_REF HEAD: $(head -n 1 "$OUT/.stderr")"
  while IFS= read -r -d '' change; do
    IFS= read -r -d '' path
    if [[ "$change" == R* ]]; then  # R<similarity> OLD NEW
      old_path=$path
      IFS= read -r -d '' path
      renamed_from["$path"]=$old_path
    fi
    changed+=("$path")
  done < "$OUT/.changed"
  rm -f "$OUT/.changed"
fi
# the models, one per entry of a NUL-separated list: no name is split or expanded
if [ -n "${MODELS:-}" ]; then
  words "$MODELS" > "$OUT/.models" 2> "$OUT/.stderr" || setup_failed "the models input: $(cat "$OUT/.stderr")"
else
  : "${BASE_REF:?set BASE_REF or MODELS}"
  : > "$OUT/.models"
  [ ${#changed[@]} -eq 0 ] || printf '%s\0' "${changed[@]}" > "$OUT/.models"
fi

# Git LFS: `git show BASE:PATH` of a model kept in LFS is its pointer. The base version of the
# model at $1 (its path at $BASE_REF) into the file $2: the object, through `git lfs smudge` (from
# .git/lfs, else fetched from the remote); 1 with one line on stderr when it cannot be had.
LFS_POINTER="version https://git-lfs.github.com/spec/v1"
is_lfs_pointer() { [ "$(head -c ${#LFS_POINTER} "$1" 2>/dev/null)" = "$LFS_POINTER" ]; }
base_version() {
  git show "$BASE_REF:$1" > "$2" || return 1
  is_lfs_pointer "$2" || return 0
  local fix="in a GitHub workflow, actions/checkout with lfs: true, then git lfs fetch origin $BASE_REF"
  if ! git lfs version > /dev/null 2>&1; then
    printf 'onnxroof: error: %s at %s is a Git LFS pointer and git-lfs is not installed: install it (%s)\n' \
      "$1" "$BASE_REF" "$fix" >&2
    return 1
  fi
  if ! git lfs smudge -- "$1" < "$2" > "$2.object" 2> /dev/null || is_lfs_pointer "$2.object"; then
    printf 'onnxroof: error: %s at %s is a Git LFS pointer whose object is not here and could not be fetched: %s\n' \
      "$1" "$BASE_REF" "git lfs fetch origin $BASE_REF ($fix)" >&2
    rm -f "$2.object"
    return 1
  fi
  mv "$2.object" "$2"
}
# a path as an argument: one starting with - is not read as a flag
as_argument() { if [[ "$1" == -* ]]; then printf './%s' "$1"; else printf '%s' "$1"; fi; }

declare -A page_taken=()  # the pages' names so far
status=0
total=0
rows=""
failed=""
broke=""
while IFS= read -r -d '' model <&3; do
  total=$((total + 1))
  name=$(printf '%s' "$model" | tr '/' '_')
  while [ -n "${page_taken["$name"]:-}" ]; do name="${name}_"; done  # a/b.onnx and a_b.onnx: a page each
  page_taken["$name"]=1
  shown=$(plain "$model" | escape)
  base="$model"  # a new model is diffed against itself: the comment shows its totals
  new=$([ -n "${BASE_REF:-}" ] && echo " (new)")
  old_path=${renamed_from["$model"]:-$model}
  flags=()
  rc=0
  if [ -n "${BASE_REF:-}" ] && git cat-file -e "$BASE_REF:$old_path" 2>/dev/null; then
    base="$OUT/base/$model"  # the same file name: the comment names the model once
    mkdir -p "$(dirname "$base")"
    new=""
    if [ "$old_path" != "$model" ]; then
      new=" (renamed from <code>$(plain "$old_path" | escape)</code>)"
    fi
    base_version "$old_path" "$base" 2> "$OUT/.error" || rc=2
  fi
  if [ "$rc" -ne 0 ]; then
    :  # the base version could not be had: its error line is in .error
  elif ! model_flags "$model" > "$OUT/.flags" 2> "$OUT/.stderr"; then
    rc=2
    sed -e 's/^/onnxroof: error: /' "$OUT/.stderr" > "$OUT/.error"
  else
    while IFS= read -r -d '' flag; do flags+=("$flag"); done < "$OUT/.flags"
    # the comment's table and the page from one analysis of each side: written both, or neither
    onnxroof diff "$(as_argument "$base")" "$(as_argument "$model")" "${flags[@]}" "${targets[@]}" "${budgets[@]}" \
      --format markdown --html "$OUT/$name.diff.html" -q > "$OUT/.diff.md" 2> "$OUT/.error" || rc=$?
  fi
  case "$rc" in
    0) outcome=$([ ${#budgets[@]} -gt 0 ] && echo "✅ budgets hold$new" || echo "✅ analysed$new") ;;
    1) outcome="❌ a budget is broken$new"; broke="$broke $(plain "$model")" ;;
    2) outcome="⚠️ could not be analysed$new"; failed="$failed $(plain "$model")" ;;
    *) outcome="⚠️ onnxroof failed (exit $rc)"; failed="$failed $(plain "$model")" ;;
  esac
  rows="$rows| <code>$shown</code> | $outcome |"$'\n'
  printf '**<code>%s</code>**: %s\n\n' "$shown" "$outcome" >> "$body"
  if [ "$rc" -le 1 ]; then
    cat "$OUT/.diff.md" >> "$body"
  else
    error=$(grep -v '^onnxroof: warning' "$OUT/.error")
    # the error names the base copy by its own path: name it as the model's base version
    [ "$base" = "$model" ] || error=${error//"$base"/"$old_path (its base version)"}
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
done 3< "$OUT/.models"
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
rm -f "$body" "$OUT/.flags" "$OUT/.stderr" "$OUT/.error" "$OUT/.diff.md" "$OUT/.models" "$OUT/.targets"
echo "$summary" >&2

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "status=$status" >> "$GITHUB_OUTPUT"
  echo "summary=$summary" >> "$GITHUB_OUTPUT"
  echo "comment=$comment" >> "$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$comment" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$status"
