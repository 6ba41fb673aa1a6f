package vm

import (
	"errors"
	"time"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/templates"
)

// DrillTemplate loads the template the vm drill's boxes are minted from (name, else box
// new's default) and checks, as box new would, that it can mint one.
func (b Backend) DrillTemplate(name string, now time.Time) (*templates.Template, error) {
	name = TemplateName(name, nil)
	tmpl, err := templates.Load(name, templates.Dir(b.ConfigHome))
	if err != nil {
		if errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil {
			return nil, errs.Usage("", "%w", &TemplateError{err})
		}
		return nil, err
	}
	// The drill's boxes are containers (they are probed through exec either way).
	if _, err := MintPlan(NewOptions{Name: "drill", Container: true}, nil, tmpl, Placement(b.Getenv), "", now); err != nil {
		return nil, b.err(err)
	}
	return tmpl, nil
}

// TemplateError: the vm drill's template is not one box has (or not a template's name).
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }
