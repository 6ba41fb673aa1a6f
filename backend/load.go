package backend

import (
	"errors"

	"github.com/heavy-duty/box/internal/errs"
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

// LoadProfile and LoadTemplate load by name from configHome, as both backends do: a
// name box has none of is a NoSuchError (a usage error); a file that does not parse is
// the loader's error as it is.
func LoadProfile(configHome, name string) (*profiles.Profile, error) {
	p, err := profiles.Load(name, profiles.Dir(configHome))
	if err != nil && (errors.Is(err, profiles.ErrNotFound) || profiles.ValidName(name) != nil) {
		return nil, &errs.UsageError{Err: &NoSuchError{What: "profile", Err: err}}
	}
	return p, err
}

func LoadTemplate(configHome, name string) (*templates.Template, error) {
	t, err := templates.Load(name, templates.Dir(configHome))
	if err != nil && (errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil) {
		return nil, &errs.UsageError{Err: &NoSuchError{What: "template", Err: err}}
	}
	return t, err
}
