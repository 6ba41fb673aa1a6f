package templates

import (
	"errors"

	"github.com/heavy-duty/box/internal/strictoml"
)

// manifest is template.toml: the keys a template may set, and no others.
type manifest struct {
	Description   string   `toml:"description"`
	Image         string   `toml:"image"`
	User          string   `toml:"user"`
	CPU           string   `toml:"cpu"`
	Memory        string   `toml:"memory"`
	Disk          string   `toml:"disk"`
	RequireVM     bool     `toml:"require_vm"`
	Autostart     bool     `toml:"autostart"`
	BootstrapRole string   `toml:"bootstrap_role"`
	Tools         []string `toml:"tools"`
	Command       []string `toml:"command"`
	Agent         *Agent   `toml:"agent"`
}

// ParseManifest parses template.toml strictly into a Template (without Name/Source).
func ParseManifest(file string, data []byte) (*Template, error) {
	var m manifest
	if err := strictoml.Decode(file, data, &m); err != nil {
		var uk *strictoml.UnknownKeyError
		// The whole key too: a dotted `network.mode = "lan"` is undecoded as network.mode.
		if errors.As(err, &uk) && (isNetworkKey(uk.Last()) || isNetworkKey(uk.Key)) {
			return nil, &NetworkError{File: uk.File, Line: uk.Line, Key: uk.Key}
		}
		return nil, err
	}
	t := &Template{
		Description: m.Description, Image: m.Image, User: m.User,
		CPU: m.CPU, Memory: m.Memory, Disk: m.Disk,
		RequireVM: m.RequireVM, Autostart: m.Autostart, BootstrapRole: m.BootstrapRole,
		Tools: m.Tools, Command: m.Command, Agent: m.Agent,
	}
	if err := t.Validate(); err != nil {
		return nil, wrapFile(file, err)
	}
	return t, nil
}
