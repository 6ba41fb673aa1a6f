package vm

import (
	"fmt"

	"github.com/heavy-duty/box/internal/charclass"
	"github.com/heavy-duty/box/internal/errs"
)

// DefaultTmuxSession is the session box tmux attaches to without a name (upstream's).
const DefaultTmuxSession = "main"

var (
	sessionFirst = charclass.New("A-Za-z0-9_")
	sessionRest  = charclass.New("A-Za-z0-9_-")
)

// TmuxSession is the session box tmux on box attaches to: args (SESSION, or none for
// the default), checked to be a name tmux and a shell take as is.
func TmuxSession(box string, args []string) (string, error) {
	switch {
	case len(args) == 0:
		return DefaultTmuxSession, nil
	case len(args) > 1:
		return "", fmt.Errorf("tmux takes one session, got %d", len(args))
	case !charclass.Match(args[0], sessionFirst, sessionRest, 64):
		return "", errs.Usage("", "%w", &SessionNameError{Box: box, Name: args[0]})
	}
	return args[0], nil
}

// SessionNameError: Name is not a tmux session name box takes (for box tmux on Box).
type SessionNameError struct{ Box, Name string }

func (e *SessionNameError) Error() string {
	return fmt.Sprintf("session name %q: want letters, digits, '-' and '_'", e.Name)
}
