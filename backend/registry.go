package backend

import "sort"

// Registry is the backends a verb may dispatch to, in the order they are asked.
type Registry struct{ list []Backend }

// NewRegistry is a registry of bs, asked in that order; the last is the default (For).
func NewRegistry(bs ...Backend) Registry { return Registry{list: bs} }

// All are the backends, in order (box list asks each).
func (r Registry) All() []Backend { return r.list }

// List is the boxes of every backend, by name (box list); a backend that cannot list
// fails it. Never nil: no box is an empty list.
func (r Registry) List() ([]Summary, error) {
	out := []Summary{}
	for _, b := range r.list {
		list, err := b.List()
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Kind is the backend of that kind, or nil.
func (r Registry) Kind(kind string) Backend {
	for _, b := range r.list {
		if b.Kind() == kind {
			return b
		}
	}
	return nil
}

// Taken is the one "is this name taken" check: the first backend that has something
// called name answers a *NameTakenError (errors.Is ErrNameTaken); a backend that could
// not rule a clash out answers its error.
func (r Registry) Taken(name string) error {
	for _, b := range r.list {
		taken, err := b.Taken(name)
		if err != nil {
			return err
		}
		if taken {
			return &NameTakenError{Name: name, Backend: b.Kind()}
		}
	}
	return nil
}

// For is the backend that holds the box name: the first (but the last) that has
// something called name, else the last, which words its own refusal when it has no such
// box either. An invalid name is no backend's: the last words that refusal too. A
// backend's verbs refuse, by name, a thing it holds that it did not make.
func (r Registry) For(name string) (Backend, error) {
	if len(r.list) == 0 {
		return nil, ErrNotFound
	}
	last := r.list[len(r.list)-1]
	if ValidName(name) != nil {
		return last, nil
	}
	for _, b := range r.list[:len(r.list)-1] {
		taken, err := b.Taken(name)
		if err != nil {
			return nil, err
		}
		if taken {
			return b, nil
		}
	}
	return last, nil
}
