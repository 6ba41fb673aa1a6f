package incus

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// Instance types.
const (
	TypeVM        = "virtual-machine"
	TypeContainer = "container"
)

// Instance is the part of an Incus instance box reads. The expanded (profile-merged)
// config and devices are left out on purpose: box never decides anything from a
// profile's keys, and skipping them keeps listing many instances cheap.
type Instance struct {
	Name         string                       `json:"name"`
	Type         string                       `json:"type"`
	Status       string                       `json:"status"` // Running, Stopped, ...
	StatusCode   int                          `json:"status_code"`
	Description  string                       `json:"description"`
	Architecture string                       `json:"architecture"`
	Config       map[string]string            `json:"config"`  // the instance's own keys
	Devices      map[string]map[string]string `json:"devices"` // the instance's own devices
	Profiles     []string                     `json:"profiles"`
	Ephemeral    bool                         `json:"ephemeral"`
	Stateful     bool                         `json:"stateful"`
	CreatedAt    time.Time                    `json:"created_at"`
	LastUsedAt   time.Time                    `json:"last_used_at"`
	Location     string                       `json:"location"`
	Project      string                       `json:"project"`
}

// Running reports whether the instance is running.
func (i Instance) Running() bool { return i.Status == "Running" }

// InstancePut is the writable part of an instance (PUT /1.0/instances/{name}).
type InstancePut struct {
	Architecture string                       `json:"architecture,omitempty"`
	Config       map[string]string            `json:"config"`
	Devices      map[string]map[string]string `json:"devices"`
	Ephemeral    bool                         `json:"ephemeral"`
	Profiles     []string                     `json:"profiles"`
	Stateful     bool                         `json:"stateful"`
	Description  string                       `json:"description"`
}

// InstanceState is the runtime state of an instance.
type InstanceState struct {
	Status     string                  `json:"status"`
	StatusCode int                     `json:"status_code"`
	Pid        int64                   `json:"pid"`
	Processes  int64                   `json:"processes"`
	Network    map[string]NetworkState `json:"network"`
}

// NetworkState is one interface of an instance.
type NetworkState struct {
	Addresses []NetworkAddress `json:"addresses"`
	Hwaddr    string           `json:"hwaddr"`
	HostName  string           `json:"host_name"`
	State     string           `json:"state"`
}

// NetworkAddress is one address of an interface.
type NetworkAddress struct {
	Family  string `json:"family"` // inet, inet6
	Address string `json:"address"`
	Netmask string `json:"netmask"`
	Scope   string `json:"scope"` // global, link, local
}

// IPv4 returns the first global IPv4 address of iface, or "". A VM's state is what the
// incus-agent inside it answers, text the guest wrote and incusd passes on: only an
// address that parses as IPv4 is returned, formatted here, so a guest's terminal escape
// never reaches the operator's screen through box list or box info; a box whose state
// holds none is looked up in the leases, the host's own record.
func (s InstanceState) IPv4(iface string) string {
	for _, a := range s.Network[iface].Addresses {
		if a.Family == "inet" && a.Scope == "global" {
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
				return ip.String()
			}
		}
	}
	return ""
}

// InstanceFull is an instance with its state and snapshots (recursion=2).
type InstanceFull struct {
	Instance
	State     *InstanceState `json:"state"`
	Snapshots []Snapshot     `json:"snapshots"`
}

func instPath(name string) string { return "/instances/" + url.PathEscape(name) }

// ListInstances returns every instance (GET /1.0/instances?recursion=1).
func (c *Client) ListInstances(ctx context.Context) ([]Instance, error) {
	var out []Instance
	if _, err := c.get(ctx, "/instances", url.Values{"recursion": {"1"}}, &out); err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return out, nil
}

// ListInstancesFull returns every instance with state and snapshots (recursion=2): one
// call for `box list`/`info` instead of one per instance, but heavier for incusd.
func (c *Client) ListInstancesFull(ctx context.Context) ([]InstanceFull, error) {
	var out []InstanceFull
	if _, err := c.get(ctx, "/instances", url.Values{"recursion": {"2"}}, &out); err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return out, nil
}

// ListBoxes returns the instances that are boxes (IsBox), filtered client-side: the tag
// boundary is box's own rule, and this list must show a box whatever a server's filter
// support.
func (c *Client) ListBoxes(ctx context.Context) ([]Instance, error) {
	all, err := c.ListInstances(ctx)
	return onlyBoxes(all, func(i Instance) Instance { return i }), err
}

// onlyBoxes keeps the elements whose instance IsBox, in place.
func onlyBoxes[T any](all []T, inst func(T) Instance) []T {
	out := all[:0]
	for _, i := range all {
		if IsBox(inst(i)) {
			out = append(out, i)
		}
	}
	return out
}

// BoxFilter asks incusd (API extension api_filtering) for box's instances only, plus
// those it could not render (status Error, which carry no config to tell).
const BoxFilter = "config." + KeyBox + " eq 1 or config." + KeyLegacy + " eq 1 or status eq Error"

// ListBoxesFull returns the boxes with their state and snapshots in one request
// (recursion=2, filtered by incusd with BoxFilter; a server without filtering answers
// every instance, and IsBox decides here either way). An instance incusd could not
// render in full comes back as a bare "Error" entry without config: only for those a
// plain GET of the instance says whether it is a box; a box then comes back without
// state (State nil), for the caller to ask. One that cannot be read is left out, as
// a recursion=1 list leaves out the same failure.
func (c *Client) ListBoxesFull(ctx context.Context) ([]InstanceFull, error) {
	var all []InstanceFull
	q := url.Values{"recursion": {"2"}, "filter": {BoxFilter}}
	if _, err := c.get(ctx, "/instances", q, &all); err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	for i, inst := range all {
		if inst.Config != nil || inst.Status != "Error" {
			continue
		}
		if one, _, err := c.Instance(ctx, inst.Name); err == nil {
			all[i] = InstanceFull{Instance: *one}
		}
	}
	return onlyBoxes(all, func(i InstanceFull) Instance { return i.Instance }), nil
}

// InstanceFull returns one instance with its state and snapshots (GET
// /1.0/instances/{name}?recursion=1, API extension instance_get_full). incusd renders
// the state of every instance it answers in full, stopped ones too: State nil means it
// did not (a server without the extension answers the bare instance).
func (c *Client) InstanceFull(ctx context.Context, name string) (*InstanceFull, error) {
	var inst InstanceFull
	if _, err := c.get(ctx, instPath(name), url.Values{"recursion": {"1"}}, &inst); err != nil {
		return nil, fmt.Errorf("instance %q: %w", name, err)
	}
	return &inst, nil
}

// Instance returns one instance and its ETag.
func (c *Client) Instance(ctx context.Context, name string) (*Instance, string, error) {
	var inst Instance
	etag, err := c.get(ctx, instPath(name), nil, &inst)
	if err != nil {
		return nil, "", fmt.Errorf("instance %q: %w", name, err)
	}
	return &inst, etag, nil
}

// State returns the runtime state of an instance.
func (c *Client) State(ctx context.Context, name string) (*InstanceState, error) {
	var st InstanceState
	if _, err := c.get(ctx, instPath(name)+"/state", nil, &st); err != nil {
		return nil, fmt.Errorf("instance %q: state: %w", name, err)
	}
	return &st, nil
}

// Create creates an instance from a request (see MintRequest, CloneRequest) and waits
// for it. It does not start it.
func (c *Client) Create(ctx context.Context, req InstancesPost) error {
	if err := ValidateName(req.Name); err != nil {
		return err
	}
	var q url.Values
	if c.Target != "" {
		q = url.Values{"target": {c.Target}}
	}
	if _, err := c.async(ctx, request{method: http.MethodPost, path: "/instances", query: q, body: req}); err != nil {
		return fmt.Errorf("create instance %q: %w", req.Name, err)
	}
	return nil
}

// StatePut is the body of PUT /1.0/instances/{name}/state.
type StatePut struct {
	Action   string `json:"action"` // start, stop, restart, freeze, unfreeze
	Timeout  int    `json:"timeout"`
	Force    bool   `json:"force"`
	Stateful bool   `json:"stateful"`
}

func (c *Client) setState(ctx context.Context, name string, s StatePut) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, err := c.async(ctx, request{method: http.MethodPut, path: instPath(name) + "/state", body: s}); err != nil {
		return fmt.Errorf("%s instance %q: %w", s.Action, name, err)
	}
	return nil
}

// Start starts an instance.
func (c *Client) Start(ctx context.Context, name string) error {
	return c.setState(ctx, name, StatePut{Action: "start", Timeout: -1})
}

// Stop stops an instance: a clean shutdown within timeout (seconds), or a forced stop
// when force is set.
func (c *Client) Stop(ctx context.Context, name string, timeout time.Duration, force bool) error {
	t := int(timeout / time.Second)
	if t <= 0 {
		t = -1
	}
	return c.setState(ctx, name, StatePut{Action: "stop", Timeout: t, Force: force})
}

// Delete deletes an instance and its snapshots. Incus refuses a running instance.
func (c *Client) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, err := c.async(ctx, request{method: http.MethodDelete, path: instPath(name)}); err != nil {
		return fmt.Errorf("delete instance %q: %w", name, err)
	}
	return nil
}

// Rename renames an instance. Incus refuses a running instance; its error is returned
// as *Error, wrapped naming the instance.
func (c *Client) Rename(ctx context.Context, name, newName string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidateName(newName); err != nil {
		return err
	}
	body := map[string]any{"name": newName}
	if _, err := c.async(ctx, request{method: http.MethodPost, path: instPath(name), body: body}); err != nil {
		return fmt.Errorf("rename instance %q to %q: %w", name, newName, err)
	}
	return nil
}

// Update replaces the writable part of an instance. etag (from Instance) makes the
// write conditional: Incus refuses it if the instance changed meanwhile.
func (c *Client) Update(ctx context.Context, name string, put InstancePut, etag string) error {
	if _, err := c.async(ctx, request{method: http.MethodPut, path: instPath(name), body: put, etag: etag}); err != nil {
		return fmt.Errorf("update instance %q: %w", name, err)
	}
	return nil
}

// SetConfig sets and unsets instance config keys with a read-modify-write guarded by
// the ETag (a PATCH could not unset keys).
func (c *Client) SetConfig(ctx context.Context, name string, set map[string]string, unset ...string) error {
	inst, etag, err := c.Instance(ctx, name)
	if err != nil {
		return err
	}
	put := InstancePut{
		Architecture: inst.Architecture, Config: inst.Config, Devices: inst.Devices,
		Ephemeral: inst.Ephemeral, Profiles: inst.Profiles, Stateful: inst.Stateful,
		Description: inst.Description,
	}
	if put.Config == nil {
		put.Config = map[string]string{}
	}
	for k, v := range set {
		put.Config[k] = v
	}
	for _, k := range unset {
		delete(put.Config, k)
	}
	return c.Update(ctx, name, put, etag)
}

// WaitIPv4 polls the state of a running instance until iface has a global IPv4 address
// (its DHCP lease) and returns it, or gives up when ctx ends.
func (c *Client) WaitIPv4(ctx context.Context, name, iface string) (string, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := c.State(ctx, name)
		if err != nil {
			return "", err
		}
		if ip := st.IPv4(iface); ip != "" {
			return ip, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("instance %q: no IPv4 address on %s: %w", name, iface, ctx.Err())
		case <-tick.C:
		}
	}
}
