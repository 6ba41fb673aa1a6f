package backend

import (
	"testing"
	"time"
)

func TestDefaultLabel(t *testing.T) {
	l := DefaultLabel(time.Unix(1767225600, 0))
	if l != "manual-1767225600" || ValidLabel(l) != nil {
		t.Errorf("DefaultLabel: %q (%v)", l, ValidLabel(l))
	}
}
