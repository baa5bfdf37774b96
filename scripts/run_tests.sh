#!/usr/bin/env bash
# The suite in two pytest processes at once, one per core: the readers' end-to-end tests
# (poll, webhook, pull-request loop, the local API, the spec lane: real processes, tmux
# and git, mostly waiting) beside
# everything else. Each has its own temporary directory; the first one's output is shown
# after the second's. Then the tests that set the machine's load themselves (busy loops
# on every core) run alone: beside the other two processes their load would be the
# suite's, not theirs. Exit 1 when any fails.
set -u
pytest="$1"
shift
scratch="$(mktemp -d "${TMPDIR:-/tmp}/the-loop-tests.XXXXXX")"
alone=(tests/test_webhook_under_load.py)
readers=()
for file in tests/test_poll_*.py tests/test_webhook_*.py tests/test_pr_*.py tests/test_api_*.py \
  tests/test_spec_lane_*.py; do
  [[ " ${alone[*]} " == *" $file "* ]] || readers+=("$file")  # a file named is collected
done
"$pytest" --basetemp="$scratch/readers" "$@" "${readers[@]}" >"$scratch/readers.log" 2>&1 &
first=$!
"$pytest" --basetemp="$scratch/rest" "$@" \
  --ignore-glob='tests/test_poll_*.py' --ignore-glob='tests/test_webhook_*.py' \
  --ignore-glob='tests/test_pr_*.py' --ignore-glob='tests/test_api_*.py' \
  --ignore-glob='tests/test_spec_lane_*.py' tests
rest=$?
wait "$first"
readers_rc=$?
echo "--- the readers' tests ---"
cat "$scratch/readers.log"
echo "--- alone: the tests that load the machine themselves ---"
"$pytest" --basetemp="$scratch/alone" "$@" "${alone[@]}"
alone_rc=$?
[ "$alone_rc" -eq 5 ] && alone_rc=0  # none selected (a -m or -k that leaves none)
rm -rf "$scratch"
[ "$rest" -eq 0 ] && [ "$readers_rc" -eq 0 ] && [ "$alone_rc" -eq 0 ]
