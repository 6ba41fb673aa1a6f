package vm

import "time"

// ExportFile is the file box export writes without one named: the box's name and the
// time in UTC, e.g. work-20260102T150405Z.tar.gz.
func ExportFile(name string, now time.Time) string {
	return name + "-" + now.UTC().Format("20060102T150405Z") + ".tar.gz"
}
