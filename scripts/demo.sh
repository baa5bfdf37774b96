#!/usr/bin/env bash
# A real demo of the main job, with nothing but Python, git and tmux:
# spawn a stand-in agent for a work item in a local git repository, list it,
# rehearse a reset, reset it, and show the event log lines it wrote.
set -euo pipefail

for tool in git tmux the-loop; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is not on PATH" >&2; exit 1; }
done

demo=$(mktemp -d "${TMPDIR:-/tmp}/the-loop-demo.XXXXXX")
socket="the-loop-demo-$$"
cleanup() {
  tmux -L "$socket" kill-server >/dev/null 2>&1 || true
  rm -rf "$demo"
}
trap cleanup EXIT

export GIT_AUTHOR_NAME="the-loop demo" GIT_AUTHOR_EMAIL="demo@the-loop.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"

# Bold step headings only on a terminal, and never when NO_COLOR is set (no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
# Show each command as it would be typed: a word the shell would read otherwise (a `#`
# starts a comment) is quoted.
step() {
  local shown=() word
  for word in "$@"; do
    case $word in
      *[\#\ \*\?]*) shown+=("'$word'") ;;
      *) shown+=("$word") ;;
    esac
  done
  printf '\n%s$ %s%s\n' "$bold" "${shown[*]}" "$plain"
  "$@"
}

# 1. A local "GitHub" repository: a bare remote with one commit.
git init -q -b main "$demo/seed"
echo "# octo/app" >"$demo/seed/README.md"
git -C "$demo/seed" add README.md
git -C "$demo/seed" commit -q -m "first commit"
git clone -q --bare "$demo/seed" "$demo/app.git"

# 2. A stand-in agent: prints what it was given and works until it is stopped.
cat >"$demo/agent.sh" <<'AGENT'
#!/usr/bin/env bash
echo "stand-in agent: session $1 working on $2 in $(pwd)"
trap 'echo "agent: asked to stop"; exit 0' TERM
while true; do sleep 1; done
AGENT
chmod +x "$demo/agent.sh"

# 3. The config: state root, workspace root mapped to the local remote, private tmux socket.
mkdir -p "$demo/home/.the-loop"
cat >"$demo/home/.the-loop/cli-config.yaml" <<CONFIG
state:
  root: $demo/state
routing:
  defaultHarness: command
  harnesses:
    command:
      argv: ["$demo/agent.sh", "{session_id}", "{work_item}"]
  workspace:
    root: $demo/work
    repositories:
      octo/app: $demo/app.git
  tmux:
    socket: $socket
    harnessKillGraceSeconds: 2
CONFIG
export THE_LOOP_CLI_CONFIG="$demo/home/.the-loop/cli-config.yaml"
cd "$demo"

item="github:octo/app#15"
step the-loop --version
step the-loop sessions start --work-item "$item" --no-comment
sleep 1
step the-loop sessions list
echo
echo "# the agent's pane in tmux:"
tmux -L "$socket" capture-pane -p -J -t "=loop-github-octo-app-15:" | sed '/^$/d'
step the-loop sessions reset --all --dry-run
step the-loop sessions reset --work-item "$item"
echo
echo "# the agent after the reset: its process has ended; tmux keeps the dead pane (keepSessionOnClose)"
tmux -L "$socket" list-panes -t "=loop-github-octo-app-15:" \
  -F "pane dead: #{pane_dead}  exit status: #{pane_dead_status}" 2>/dev/null || echo "tmux session gone"
step the-loop sessions list
echo
echo "# the event log (append-only):"
step the-loop events --format table
echo
echo "demo: done — everything it made lived in $demo and is removed now"
