package bwrap

import (
	"fmt"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/profiles"
)

// RunSettings are box run's choices as given: the profile and template by name ("":
// the profile's template), the backend asked for ("": the profile's), and the rest of
// the request (Network, Isolation, Env, Command, ...) whose Profile and Template
// NewRequest fills in.
type RunSettings struct {
	Profile, Template, Backend string
	Request                    Request
}

// BackendError: the backend asked for is not one. The CLI words it.
type BackendError struct{ Err error }

func (e *BackendError) Error() string { return e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

// ModeError: the isolation mode asked for is not one. The CLI words it.
type ModeError struct{ Err error }

func (e *ModeError) Error() string { return e.Err.Error() }
func (e *ModeError) Unwrap() error { return e.Err }

// NotBwrapError: a bwrap launch was asked of another backend, by the profile Profile
// or (Asked) by the Backend setting. The CLI words it.
type NotBwrapError struct {
	Profile, Backend string
	Asked            bool
}

func (e *NotBwrapError) Error() string {
	return fmt.Sprintf("profile %q: backend %q is not bwrap", e.Profile, e.Backend)
}

// NewRequest loads the profile and template s names from configHome, checks the
// settings against them, and makes the resolver's request. It looks nothing else up.
func NewRequest(configHome string, s RunSettings) (Request, error) {
	req := s.Request
	prof, err := backend.LoadProfile(configHome, s.Profile)
	if err != nil {
		return req, err
	}
	kind := prof.Backend
	if s.Backend != "" {
		if err := profiles.ValidBackend(s.Backend); err != nil {
			return req, &BackendError{err}
		}
		kind = s.Backend
	}
	if kind != profiles.BackendBwrap {
		return req, &NotBwrapError{Profile: prof.Name, Backend: kind, Asked: s.Backend != ""}
	}
	tmplName := prof.Template
	if s.Template != "" {
		tmplName = s.Template
	}
	tmpl, err := backend.LoadTemplate(configHome, tmplName)
	if err != nil {
		return req, err
	}
	if req.Network != "" {
		if err := profiles.ValidNetwork(req.Network); err != nil {
			return req, &NetworkError{err}
		}
	}
	if err := profiles.ValidIsolation(req.Isolation); err != nil {
		return req, &ModeError{err}
	}
	if err := profiles.CheckKeys(profiles.UseRun, prof, tmpl); err != nil {
		return req, err
	}
	req.Profile, req.Template = prof, tmpl
	return req, nil
}
