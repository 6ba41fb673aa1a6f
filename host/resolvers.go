package host

import (
	"fmt"
	"net/netip"
)

// ParseResolvers parses setup-host's upstream resolvers: IPv4 addresses, refused at the
// first that is not one.
func ParseResolvers(ss []string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, r := range ss {
		a, err := netip.ParseAddr(r)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("--resolver %q: want an IPv4 address", r)
		}
		out = append(out, a)
	}
	return out, nil
}
