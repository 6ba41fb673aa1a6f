package vm

// EntryExit is the exit code of the entry script when the box's user does not exist in
// it (the command never ran). The script prints why, as box does.
const EntryExit = 125

// entryScript runs as root in the box: it looks the user up in the box's own password
// database (uids differ between images), moves to their home, sets HOME, USER,
// LOGNAME and SHELL, and execs the command (or the user's login shell) with the user's
// uid, gid and groups. One exec round trip, no PAM, argv passed through untouched.
const entryScript = `u=$1; login=$2; shift 2
if ! pw=$(getent passwd "$u"); then
  echo "box: error: there is no user \"$u\" in this box" >&2
  echo "box: hint: cloud-init may still be creating it, or the template's user-data does not; as root: box incus BOX -- exec {} -- sh" >&2
  exit 125
fi
IFS=: read -r _ _ uid gid _ home shell <<END
$pw
END
[ -n "$shell" ] || shell=/bin/sh
cd "$home" 2>/dev/null || cd /
export HOME="$home" USER="$u" LOGNAME="$u" SHELL="$shell"
[ "$login" = 1 ] && set -- "$shell" -l
[ "$uid" = 0 ] && exec "$@"
if command -v setpriv >/dev/null 2>&1; then
  exec setpriv --reuid="$uid" --regid="$gid" --init-groups "$@"
fi
exec runuser -u "$u" -- "$@"
`

// EntryCommand is the command that runs cmd in a box as user, or (login) the user's
// login shell. It runs as root through the exec API and drops to the user itself.
func EntryCommand(user string, login bool, cmd []string) []string {
	l := "0"
	if login {
		l = "1"
	}
	return append([]string{"/bin/sh", "-c", entryScript, "box-entry", user, l}, cmd...)
}
