package vm

import (
	"testing"
	"time"
)

func TestExportFile(t *testing.T) {
	now := time.Date(2026, 1, 2, 16, 4, 5, 0, time.FixedZone("CET", 3600))
	if got := ExportFile("work", now); got != "work-20260102T150405Z.tar.gz" {
		t.Errorf("ExportFile: %q", got)
	}
}
