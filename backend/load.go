package backend

import (
	"errors"
	"io/fs"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

// NoSuchError: a profile or template (What) that box does not have, or a name that
// cannot be one; Err is the loader's own wording. A usage error: the CLI says where the
// list is.
type NoSuchError struct {
	What string // "profile" or "template"
	Err  error
}

func (e *NoSuchError) Error() string { return e.Err.Error() }
func (e *NoSuchError) Unwrap() error { return e.Err }

// UnreadableError: box may not read its profiles or templates (Dir: where it looks;
// Err: the loader's own wording). Nothing is assumed in their place: a policy box
// cannot read is never taken as none.
type UnreadableError struct {
	What, Dir string // "profile" or "template"; the directory of them
	Err       error
}

func (e *UnreadableError) Error() string { return e.Err.Error() }
func (e *UnreadableError) Unwrap() error { return e.Err }

// LoadProfile and LoadTemplate load by name from configHome, as both backends do: a
// name box has none of is a NoSuchError (a usage error); one box may not read is an
// UnreadableError; a file that does not parse is the loader's error as it is.
func LoadProfile(configHome, name string) (*profiles.Profile, error) {
	dir := profiles.Dir(configHome)
	p, err := profiles.Load(name, dir)
	return p, loadErr("profile", dir, err, errors.Is(err, profiles.ErrNotFound) || profiles.ValidName(name) != nil)
}

func LoadTemplate(configHome, name string) (*templates.Template, error) {
	dir := templates.Dir(configHome)
	t, err := templates.Load(name, dir)
	return t, loadErr("template", dir, err, errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil)
}

// loadErr types a loader's error: none is a NoSuchError, denied an UnreadableError.
func loadErr(what, dir string, err error, none bool) error {
	switch {
	case err == nil:
		return nil
	case none:
		return &errs.UsageError{Err: &NoSuchError{What: what, Err: err}}
	case errors.Is(err, fs.ErrPermission):
		return &UnreadableError{What: what, Dir: dir, Err: err}
	case errs.HintOf(err) == "":
		// As box profiles and box templates say it (field review, session 18: a run
		// of a profile with an unknown key had no hint).
		if what == "profile" {
			what = "profile file"
		}
		return errs.WithHint(err, FileHint(what, err))
	}
	return err
}

// FileHint is the hint for a profile or template file box could not load: fix or
// remove it, after the tier a misspelt network key was probably meant to be.
func FileHint(what string, err error) string {
	hint := "fix or remove the " + what + " named above"
	var te *policy.TierError
	if errors.As(err, &te) && te.DidYouMean() != "" {
		hint = "network: " + te.DidYouMean() + " " + hint
	}
	return hint
}
