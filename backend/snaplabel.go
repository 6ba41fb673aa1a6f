package backend

import (
	"strconv"
	"time"
)

// DefaultLabel is the label of a snapshot taken without one: manual-<epoch seconds>.
func DefaultLabel(now time.Time) string { return "manual-" + strconv.FormatInt(now.Unix(), 10) }
