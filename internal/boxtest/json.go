package boxtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// BoxJSON, InfoJSON and SnapshotJSON decode box list --json and box info --json: the
// same JSON names as cmd/box prints (a test reads the output as any client would).
type BoxJSON struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Type       string `json:"type"`
	IPv4       string `json:"ipv4"`
	Template   string `json:"template"`
	User       string `json:"user"`
	Origin     string `json:"origin"`
	OriginFrom string `json:"origin_from"`
	Created    string `json:"created"`
	Legacy     bool   `json:"legacy"`
	Location   string `json:"location"`
	Backend    string `json:"backend"`
	Profile    string `json:"profile"`
	Network    string `json:"network"`
	Workdir    string `json:"workdir"`
}

type InfoJSON struct {
	BoxJSON
	CPU           string         `json:"cpu"`
	Memory        string         `json:"memory"`
	Disk          string         `json:"disk"`
	Snapshots     []SnapshotJSON `json:"snapshots"`
	Exposed       []Exposure     `json:"exposed"`
	Imported      string         `json:"imported"`
	ImportedLast  string         `json:"imported_last"`
	ImportedCount int            `json:"imported_count"`
	Home          string         `json:"home"`
}

type SnapshotJSON struct {
	Name    string `json:"name"`
	Created string `json:"created"`
}

// Exposure is one door of box info --json's exposed.
type Exposure struct {
	Port     int `json:"port"`
	HostPort int `json:"host_port"`
}

// documentedFields reads the field names of one section of docs/json.md: the first
// column of the table under "## HEADING".
func documentedFields(t *testing.T, heading string) []string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0) // internal/boxtest/json.go, two below the root
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/json.md has no section %q", heading)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var fields []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(sec, -1) {
		fields = append(fields, m[1])
	}
	return fields
}

// DecodeJSON parses a --json answer as an array of objects and checks that each object
// has exactly the fields docs/json.md documents, in that order.
func DecodeJSON(t *testing.T, out, heading string) []map[string]any {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("%s: not a JSON array of objects: %v\n%s", heading, err, out)
	}
	want := documentedFields(t, heading)
	dec := json.NewDecoder(strings.NewReader(out))
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		var keys []string
		d := json.NewDecoder(bytes.NewReader(r))
		d.Token() // {
		for d.More() {
			k, _ := d.Token()
			keys = append(keys, k.(string))
			var v json.RawMessage
			d.Decode(&v)
			if string(v) == "null" {
				t.Errorf("%s: field %q is null", heading, k)
			}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("%s: fields %v, documented %v", heading, keys, want)
		}
	}
	return items
}
