package backend

import (
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// fakeDoors records what Run asked; a port that is not a number is refused.
type fakeDoors struct{ calls []string }

func (f *fakeDoors) doors() Doors {
	return Doors{
		Port: func(what, s string) (int, error) {
			n, err := strconv.Atoi(s)
			if err != nil {
				return 0, errors.New(what + ": bad")
			}
			return n, nil
		},
		Expose: func(p, hp int) error {
			f.calls = append(f.calls, "expose "+strconv.Itoa(p)+" "+strconv.Itoa(hp))
			return nil
		},
		Unexpose:  func(p int) error { f.calls = append(f.calls, "unexpose "+strconv.Itoa(p)); return nil },
		Exposures: func() ([]Exposure, error) { return []Exposure{{Port: 1, HostPort: 2}}, nil },
	}
}

// Every port is read before anything changes: a bad host port opens nothing.
func TestDoorsRun(t *testing.T) {
	for _, tc := range []struct {
		r     ExposeRequest
		calls []string
		err   string
		list  int
	}{
		{ExposeRequest{Ports: []string{"3000"}}, []string{"expose 3000 3000"}, "", 0},
		{ExposeRequest{Ports: []string{"3000", "8080"}}, []string{"expose 3000 8080"}, "", 0},
		{ExposeRequest{Ports: []string{"3000", "x"}}, nil, "host port: bad", 0},
		{ExposeRequest{Ports: []string{"x", "8080"}}, nil, "port: bad", 0},
		{ExposeRequest{Remove: "3000"}, []string{"unexpose 3000"}, "", 0},
		{ExposeRequest{Remove: "x"}, nil, "--remove: bad", 0},
		{ExposeRequest{List: true}, nil, "", 1},
	} {
		f := &fakeDoors{}
		list, err := f.doors().Run(tc.r)
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%+v: error %v, want %q", tc.r, err, tc.err)
		}
		if !reflect.DeepEqual(f.calls, tc.calls) || len(list) != tc.list {
			t.Errorf("%+v: calls %q list %v, want %q and %d", tc.r, f.calls, list, tc.calls, tc.list)
		}
	}
}
