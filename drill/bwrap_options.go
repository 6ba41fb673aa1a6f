package drill

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
)

// The options OptionError names.
const (
	OptionInternetURL = "internet-url"
	OptionHostPort    = "host-port"
	OptionLAN         = "lan"
	OptionTargetURL   = "target-url" // AllowedURL or one of RebindURLs
	OptionUDP         = "udp"
)

// OptionError: an option of the bwrap drill is malformed (the CLI words it with its
// flag). Value is the option as given.
type OptionError struct{ Option, Value string }

func (e *OptionError) Error() string { return fmt.Sprintf("%s %q: malformed", e.Option, e.Value) }

// Check refuses a malformed option, the first in this order: the internet URL (http or
// https, with a host), the host port (0-65535, 0: the host's own), each LAN target
// (ADDR:PORT), the allowlist's URLs, its UDP target (ADDR:PORT, not port 53: tier
// allowlist answers DNS itself).
func (o BwrapOptions) Check() error {
	webURL := func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}
	if !webURL(o.InternetURL) {
		return &OptionError{OptionInternetURL, o.InternetURL}
	}
	if o.HostPort < 0 || o.HostPort > 65535 {
		return &OptionError{OptionHostPort, strconv.Itoa(o.HostPort)}
	}
	for _, t := range o.LAN {
		if _, err := netip.ParseAddrPort(t); err != nil {
			return &OptionError{OptionLAN, t}
		}
	}
	for _, u := range append([]string{o.AllowedURL}, o.RebindURLs...) {
		if u != "" && !webURL(u) {
			return &OptionError{OptionTargetURL, u}
		}
	}
	if o.UDP != "" {
		if ap, err := netip.ParseAddrPort(o.UDP); err != nil || ap.Port() == 53 {
			return &OptionError{OptionUDP, o.UDP}
		}
	}
	return nil
}

// Scope says what the report drilled: the profile and tier, the tier judged against
// when expect names another, the groups left out and the chosen groups with no row.
func (r *BwrapReport) Scope(expect policy.Tier) string {
	what := fmt.Sprintf("profile %s, tier %s", r.Profile, r.Tier)
	if expect != "" && expect != r.Tier {
		what += ", judged as " + string(expect)
	}
	if len(r.LeftOut) > 0 {
		what += ", groups left out: " + strings.Join(r.LeftOut, ", ")
	}
	if len(r.Empty) > 0 {
		what += ", no rows here for: " + strings.Join(r.Empty, ", ")
	}
	return what
}

// Resolver is the Resolve of a drill of box run's sandbox or of a persistent box: box's
// plan when it gives one (the box's own launch), else the request req makes for the
// probe's command, with binds added, resolved by s.
func Resolver(s *bwrap.Session, box func(probe []string, binds []bwrap.Mount) (*bwrap.Plan, func(), error),
	req func(probe []string) (bwrap.Request, error)) func([]string, []bwrap.Mount) (*bwrap.Plan, func(), error) {
	return func(probe []string, binds []bwrap.Mount) (*bwrap.Plan, func(), error) {
		p, unlock, err := box(probe, binds)
		if err != nil || p != nil {
			return p, unlock, err
		}
		r, err := req(probe)
		if err != nil {
			return nil, nil, err
		}
		r.Binds = binds
		if p, err = s.Resolve(r); err != nil {
			return nil, nil, err
		}
		return p, unlock, nil
	}
}
