package incus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// The id map keys Incus keeps on a container: Next is the map it gets at its next
// start (set at create, and again when an idmap key changes), Current the one it runs
// with, Base the first host id of an isolated container's range (0 on the shared one).
const (
	KeyIDMapNext    = "volatile.idmap.next"
	KeyIDMapCurrent = "volatile.idmap.current"
	KeyIDMapBase    = "volatile.idmap.base"
)

// IDRange is one entry of an Incus id map (the JSON of volatile.idmap.*).
type IDRange struct {
	Isuid, Isgid bool
	Hostid, Nsid int64
	Maprange     int64
}

// ParseIDMap reads an id map; one without an entry is an error (never an empty map
// that overlaps nothing).
func ParseIDMap(s string) ([]IDRange, error) {
	var m []IDRange
	if err := json.Unmarshal([]byte(s), &m); err != nil || len(m) == 0 {
		return nil, fmt.Errorf("%q is not an id map", s)
	}
	return m, nil
}

// UIDOverlap is the first pair of uid entries of a and b that share a host uid.
func UIDOverlap(a, b []IDRange) (x, y IDRange, ok bool) {
	for _, x := range a {
		for _, y := range b {
			if x.Isuid && y.Isuid && x.Hostid < y.Hostid+y.Maprange && y.Hostid < x.Hostid+x.Maprange {
				return x, y, true
			}
		}
	}
	return IDRange{}, IDRange{}, false
}

// IsolatedBase is an instance's volatile.idmap.base when it is on a range of its own
// (above 0).
func IsolatedBase(inst Instance) (int64, bool) {
	b, err := strconv.ParseInt(inst.Config[KeyIDMapBase], 10, 64)
	return b, err == nil && b > 0
}

// ListAllInstances returns every instance of every project (all-projects=true), which
// only a client allowed every project gets.
func (c *Client) ListAllInstances(ctx context.Context) ([]Instance, error) {
	var out []Instance
	if _, err := c.get(ctx, "/instances", url.Values{"recursion": {"1"}, "all-projects": {"true"}}, &out); err != nil {
		return nil, fmt.Errorf("list instances of all projects: %w", err)
	}
	return out, nil
}
