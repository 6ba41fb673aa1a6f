package vm

import (
	"context"
	"strings"
	"time"
)

// Completion is a box a shell may complete: its name, and its status as incusd says it.
type Completion struct{ Name, Status string }

// Completions are the boxes of d whose names start with prefix. They are asked with a
// short deadline: a missing or slow daemon completes nothing.
func (d Daemon) Completions(prefix string) []Completion {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := d.Client()
	defer c.Close()
	list, err := c.ListBoxes(ctx)
	if err != nil {
		return nil
	}
	var out []Completion
	for _, i := range list {
		if strings.HasPrefix(i.Name, prefix) {
			out = append(out, Completion{Name: i.Name, Status: i.Status})
		}
	}
	return out
}
