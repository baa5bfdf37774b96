#!/usr/bin/env bash
# The suite in two pytest processes at once, one per core: the readers' end-to-end tests
# (poll, webhook, pull-request loop: real processes, tmux and git, mostly waiting) beside
# everything else. Each has its own temporary directory; the first one's output is shown
# after the second's. Exit 1 when either fails.
set -u
pytest="$1"
shift
scratch="$(mktemp -d "${TMPDIR:-/tmp}/the-loop-tests.XXXXXX")"
readers=(tests/test_poll_*.py tests/test_webhook_*.py tests/test_pr_*.py)
"$pytest" --basetemp="$scratch/readers" "$@" "${readers[@]}" >"$scratch/readers.log" 2>&1 &
first=$!
"$pytest" --basetemp="$scratch/rest" "$@" \
  --ignore-glob='tests/test_poll_*.py' --ignore-glob='tests/test_webhook_*.py' \
  --ignore-glob='tests/test_pr_*.py' tests
rest=$?
wait "$first"
readers_rc=$?
echo "--- the readers' tests ---"
cat "$scratch/readers.log"
rm -rf "$scratch"
[ "$rest" -eq 0 ] && [ "$readers_rc" -eq 0 ]
