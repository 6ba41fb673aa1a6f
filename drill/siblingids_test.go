package drill

import (
	"strconv"
	"strings"
	"testing"
)

// The fds-in-flight verdict: a BREACH only on B's ETOOMANYREFS while A held; a PASS only
// when A held more than B's own limit (else a shared count would not have shown).
func TestInflightVerdict(t *testing.T) {
	cases := []struct {
		hold, send string
		code       int
		seen       bool
		err        string
	}{
		{"held 20240 (ETOOMANYREFS)\n", "refused: ETOOMANYREFS (nofile 20000)\n", 1, true, ""},
		{"held 20240 (ETOOMANYREFS)\n", "sent (nofile 20000)\n", 0, false, ""},
		{"held 1012 (ETOOMANYREFS)\n", "sent (nofile 20000)\n", 0, false, "proves nothing"},
		{"error: no /dev/null\n", "sent (nofile 1024)\n", 0, false, "did not report"},
		{"held 20240 (ETOOMANYREFS)\n", "refused: EMFILE (nofile 20000)\n", 1, false, "failed otherwise"},
		{"held 20240 (ETOOMANYREFS)\n", "sent\n", 0, false, "nofile limit"},
		{"held 20240 (ETOOMANYREFS)\n", "sh: not found\n", 127, false, "failed otherwise"},
	}
	for _, c := range cases {
		seen, detail, err := inflightVerdict(c.hold, c.send, c.code)
		if seen != c.seen || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q %q %d: seen %v, %q, %v", c.hold, c.send, c.code, seen, detail, err)
		}
	}
}

func TestHostIDVerdict(t *testing.T) {
	shared := `[{"Isuid":true,"Isgid":false,"Hostid":1000000,"Nsid":0,"Maprange":1000000000},{"Isuid":false,"Isgid":true,"Hostid":1000000,"Nsid":0,"Maprange":1000000000}]`
	own := func(base int) string {
		return strings.ReplaceAll(`[{"Isuid":true,"Isgid":false,"Hostid":B,"Nsid":0,"Maprange":65536},{"Isuid":false,"Isgid":true,"Hostid":B,"Nsid":0,"Maprange":65536}]`,
			"B", strconv.Itoa(base))
	}
	for _, c := range []struct {
		a, b string
		seen bool
		err  bool
	}{
		{shared, shared, true, false},
		{own(1065536), own(1131072), false, false},
		{own(1065536), shared, true, false}, // the shared range holds every isolated one
		{own(1065536), own(1100000), true, false},
		{"", own(1065536), false, true},
		{"[]", own(1065536), false, true},
	} {
		seen, detail, err := hostIDVerdict(c.a, c.b)
		if seen != c.seen || (err != nil) != c.err {
			t.Errorf("%s | %s: seen %v, %q, %v", c.a, c.b, seen, detail, err)
		}
	}
}
