package bwrap

import "github.com/heavy-duty/box/internal/userenv"

// OutsideOf is the operator's session as its environment tells it (package userenv):
// the home, the XDG directories, the login name and the environment itself.
func OutsideOf(getenv func(string) string, environ []string) Outside {
	return Outside{
		Home: userenv.Home(getenv), ConfigHome: userenv.ConfigHome(getenv), DataHome: userenv.DataHome(getenv),
		User: userenv.UserName(getenv), Environ: environ, RuntimeDir: userenv.RuntimeDir(getenv),
	}
}
