package incus

// Projects and trusted certificates: what box grant, box revoke and box doctor send and
// read for the restricted multi-user tier (one Incus project per granted user).

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/websocket"
)

// Project is an Incus project as box reads and writes it.
type Project struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Config      map[string]string `json:"config"`
	UsedBy      []string          `json:"used_by,omitempty"`
}

// InProject returns a client like c whose requests are scoped to project (a copy: c
// keeps its own project). It shares c's connections.
func (c *Client) InProject(project string) *Client {
	cp := *c
	cp.Project = project
	return &cp
}

// Projects lists every project the client may see.
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var ps []Project
	if _, err := c.get(ctx, "/projects", url.Values{"recursion": {"1"}}, &ps); err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// ProjectByName returns one project.
func (c *Client) ProjectByName(ctx context.Context, name string) (*Project, error) {
	var p Project
	if _, err := c.get(ctx, "/projects/"+url.PathEscape(name), nil, &p); err != nil {
		return nil, fmt.Errorf("project %q: %w", name, err)
	}
	return &p, nil
}

// CreateProject creates a project with p's description and config.
func (c *Client) CreateProject(ctx context.Context, p Project) error {
	body := map[string]any{"name": p.Name, "description": p.Description, "config": p.Config}
	if err := c.Query(ctx, http.MethodPost, "/projects", body, nil); err != nil {
		return fmt.Errorf("create project %q: %w", p.Name, err)
	}
	return nil
}

// ReplaceProject replaces a project's description and config (PUT): keys absent from
// p.Config are unset. Incus refuses a config the project's instances would violate.
func (c *Client) ReplaceProject(ctx context.Context, p Project) error {
	body := map[string]any{"description": p.Description, "config": p.Config}
	if err := c.Query(ctx, http.MethodPut, "/projects/"+url.PathEscape(p.Name), body, nil); err != nil {
		return fmt.Errorf("update project %q: %w", p.Name, err)
	}
	return nil
}

// DeleteProject deletes a project. Incus refuses one that still holds anything but its
// default profile.
func (c *Client) DeleteProject(ctx context.Context, name string) error {
	if err := c.Query(ctx, http.MethodDelete, "/projects/"+url.PathEscape(name), nil, nil); err != nil {
		return fmt.Errorf("delete project %q: %w", name, err)
	}
	return nil
}

// Profiles lists the profiles of the client's project.
func (c *Client) Profiles(ctx context.Context) ([]Profile, error) {
	var ps []Profile
	if _, err := c.get(ctx, "/profiles", url.Values{"recursion": {"1"}}, &ps); err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	return ps, nil
}

// Certificate is one entry of the daemon's trust store.
type Certificate struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Restricted  bool     `json:"restricted"`
	Projects    []string `json:"projects"`
	Certificate string   `json:"certificate"` // PEM
	Fingerprint string   `json:"fingerprint"`
}

// Certificates lists the trust store.
func (c *Client) Certificates(ctx context.Context) ([]Certificate, error) {
	var cs []Certificate
	if _, err := c.get(ctx, "/certificates", url.Values{"recursion": {"1"}}, &cs); err != nil {
		return nil, fmt.Errorf("list trusted certificates: %w", err)
	}
	return cs, nil
}

// RestrictCertificate sets a trusted certificate's name and confines it to projects
// (restricted=true); it keeps the certificate itself.
func (c *Client) RestrictCertificate(ctx context.Context, fingerprint, name string, projects []string) error {
	body := map[string]any{"name": name, "type": "client", "restricted": true, "projects": projects}
	if err := c.Query(ctx, http.MethodPatch, "/certificates/"+url.PathEscape(fingerprint), body, nil); err != nil {
		return fmt.Errorf("certificate %q: %w", name, err)
	}
	return nil
}

// DeleteCertificate removes a certificate from the trust store.
func (c *Client) DeleteCertificate(ctx context.Context, fingerprint string) error {
	if err := c.Query(ctx, http.MethodDelete, "/certificates/"+url.PathEscape(fingerprint), nil, nil); err != nil {
		return fmt.Errorf("untrust certificate %s: %w", short(fingerprint), err)
	}
	return nil
}

// Leftover is an object of a project box grant/revoke does not remove itself.
type Leftover struct {
	Kind string // "custom volume", "image", "storage bucket", ...
	Name string
}

func (l Leftover) String() string { return l.Kind + " " + l.Name }

// CustomVolumes lists the custom storage volumes of the client's project in pool.
func (c *Client) CustomVolumes(ctx context.Context, pool string) ([]string, error) {
	var urls []string
	if _, err := c.get(ctx, "/storage-pools/"+url.PathEscape(pool)+"/volumes/custom", nil, &urls); err != nil {
		return nil, fmt.Errorf("list custom volumes of pool %q: %w", pool, err)
	}
	return lastSegments(urls), nil
}

// DeleteCustomVolume deletes a custom storage volume of the client's project.
func (c *Client) DeleteCustomVolume(ctx context.Context, pool, name string) error {
	p := "/storage-pools/" + url.PathEscape(pool) + "/volumes/custom/" + url.PathEscape(name)
	if err := c.Query(ctx, http.MethodDelete, p, nil, nil); err != nil {
		return fmt.Errorf("delete custom volume %q: %w", name, err)
	}
	return nil
}

// StoragePools lists the names of the storage pools.
func (c *Client) StoragePools(ctx context.Context) ([]string, error) {
	var urls []string
	if _, err := c.get(ctx, "/storage-pools", nil, &urls); err != nil {
		return nil, fmt.Errorf("list storage pools: %w", err)
	}
	return lastSegments(urls), nil
}

// ImageFingerprints lists the images of the client's project.
func (c *Client) ImageFingerprints(ctx context.Context) ([]string, error) {
	var urls []string
	if _, err := c.get(ctx, "/images", nil, &urls); err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	return lastSegments(urls), nil
}

// DeleteImage deletes an image of the client's project.
func (c *Client) DeleteImage(ctx context.Context, fingerprint string) error {
	if err := c.Query(ctx, http.MethodDelete, "/images/"+url.PathEscape(fingerprint), nil, nil); err != nil {
		return fmt.Errorf("delete image %s: %w", short(fingerprint), err)
	}
	return nil
}

// lastSegments turns API URLs (/1.0/x/NAME?project=p) into their unescaped names.
func lastSegments(urls []string) []string {
	out := make([]string, 0, len(urls))
	for _, u := range urls {
		u, _, _ = strings.Cut(u, "?")
		n := u[strings.LastIndex(u, "/")+1:]
		if un, err := url.PathUnescape(n); err == nil {
			n = un
		}
		out = append(out, n)
	}
	return out
}

// NewDial returns a client whose connections come from dial (a unix socket reached
// with another user's peer credentials, for example); where names it in messages.
func NewDial(where string, dial func(ctx context.Context) (net.Conn, error)) *Client {
	c := New(where)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		// A unix socket in front of incusd: one connection per request, as New (a
		// pooled connection left silent holds incusd's accept loop).
		DisableKeepAlives: true,
	}
	c.http = &http.Client{Transport: tr}
	c.ws = &websocket.Dialer{NetDialContext: tr.DialContext}
	return c
}
