package drill

import (
	"errors"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
)

// TestBwrapOptionsCheck: each malformed option is refused, named, with its value as
// given; the defaults and well-formed targets pass.
func TestBwrapOptionsCheck(t *testing.T) {
	ok := BwrapOptions{InternetURL: DefaultInternetURL}
	if err := ok.Check(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	good := ok
	good.HostPort, good.LAN, good.AllowedURL, good.RebindURLs, good.UDP = 65535, []string{"192.0.2.1:80"}, "https://github.com/", []string{"http://a.example/"}, "192.0.2.1:123"
	if err := good.Check(); err != nil {
		t.Errorf("well-formed targets: %v", err)
	}
	for _, c := range []struct {
		set          func(*BwrapOptions)
		option, want string
	}{
		{func(o *BwrapOptions) { o.InternetURL = "ftp://x" }, OptionInternetURL, "ftp://x"},
		{func(o *BwrapOptions) { o.InternetURL = "http://" }, OptionInternetURL, "http://"},
		{func(o *BwrapOptions) { o.HostPort = 70000 }, OptionHostPort, "70000"},
		{func(o *BwrapOptions) { o.HostPort = -1 }, OptionHostPort, "-1"},
		{func(o *BwrapOptions) { o.LAN = []string{"192.0.2.1:80", "x"} }, OptionLAN, "x"},
		{func(o *BwrapOptions) { o.AllowedURL = "x" }, OptionTargetURL, "x"},
		{func(o *BwrapOptions) { o.RebindURLs = []string{"https://a/", "file:///etc"} }, OptionTargetURL, "file:///etc"},
		{func(o *BwrapOptions) { o.UDP = "192.0.2.1:53" }, OptionUDP, "192.0.2.1:53"},
		{func(o *BwrapOptions) { o.UDP = "host:123" }, OptionUDP, "host:123"},
	} {
		o := ok
		c.set(&o)
		var bad *OptionError
		if err := o.Check(); !errors.As(err, &bad) || bad.Option != c.option || bad.Value != c.want {
			t.Errorf("%+v: %v, want %s %q refused", o, err, c.option, c.want)
		}
	}
}

func TestBwrapReportScope(t *testing.T) {
	r := &BwrapReport{Profile: "default", Tier: policy.Tier("none")}
	if got := r.Scope(""); got != "profile default, tier none" {
		t.Errorf("Scope: %q", got)
	}
	if got := r.Scope("none"); got != "profile default, tier none" {
		t.Errorf("Scope judged as its own tier: %q", got)
	}
	r.LeftOut, r.Empty = []string{"kernel", "ssh"}, []string{"ports"}
	if got, want := r.Scope("full"), "profile default, tier none, judged as full, groups left out: kernel, ssh, no rows here for: ports"; got != want {
		t.Errorf("Scope: %q, want %q", got, want)
	}
}

// TestResolver: a box's plan wins and its release passes on; without one the request
// is made for the probe's command, with the drill's binds; a request's refusal stops it.
func TestResolver(t *testing.T) {
	boxPlan := &bwrap.Plan{}
	released := false
	byBox := Resolver(nil, func([]string, []bwrap.Mount) (*bwrap.Plan, func(), error) {
		return boxPlan, func() { released = true }, nil
	}, func([]string) (bwrap.Request, error) { t.Error("request made for a box"); return bwrap.Request{}, nil })
	p, release, err := byBox([]string{"probe"}, nil)
	if release(); p != boxPlan || err != nil || !released {
		t.Errorf("box: %v, %v (released %v)", p, err, released)
	}
	refused := errors.New("no such profile")
	var asked []string
	byReq := Resolver(nil, func([]string, []bwrap.Mount) (*bwrap.Plan, func(), error) { return nil, func() {}, nil },
		func(probe []string) (bwrap.Request, error) { asked = probe; return bwrap.Request{}, refused })
	if _, _, err := byReq([]string{"probe", "x"}, nil); err != refused || len(asked) != 2 {
		t.Errorf("request refusal: %v (asked for %v), want it passed on", err, asked)
	}
}
