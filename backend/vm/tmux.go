package vm

// tmuxScript runs in the box as its user: attach to the session or create it; an image
// without tmux gets box's error, not the shell's.
const tmuxScript = `command -v tmux >/dev/null 2>&1 || {
  echo "box: error: there is no tmux in this box" >&2
  echo "box: hint: install it in the box (sudo apt-get install tmux), or add it to the template's user-data packages" >&2
  exit 127
}
exec tmux new-session -A -s "$1"
`

// Tmux is box tmux: attach to the tmux session in the box name as its user, on your
// terminal, creating it when it is not there.
func (b Backend) Tmux(name, session string) error {
	return b.onTerminal("tmux", name, []string{"/bin/sh", "-c", tmuxScript, "box-tmux", session})
}
