package host

import "testing"

// box grant's limits: each parsed, the last of a name kept, the first bad one refused.
func TestParseGrantLimits(t *testing.T) {
	got, err := ParseGrantLimits([]string{"instances=5", "memory=16GiB", "instances=3"})
	if err != nil || len(got) != 2 || got["instances"] != "3" || got["memory"] != "16GiB" {
		t.Errorf("limits: %v %v", got, err)
	}
	if got, err := ParseGrantLimits([]string{"cpu=1", "gpu=1"}); err == nil || got != nil {
		t.Errorf("a bad limit: %v %v", got, err)
	}
	if got, err := ParseGrantLimits(nil); err != nil || len(got) != 0 || got == nil {
		t.Errorf("none: %v %v", got, err)
	}
}
