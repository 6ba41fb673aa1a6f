// Package incus is box's vm backend: a small client for the documented Incus REST API over
// incusd's unix socket, typed only for what box uses, plus pure builders for the requests
// box sends (mint, clone, snapshot, restore) and the tag boundary helpers.
//
// The upstream Go client (github.com/lxc/incus/v6/client) is refused by the module proxy
// here, so box speaks the API directly: net/http over the socket, operations waited on
// with a context, websockets (gorilla) for exec.
package incus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// DefaultSocket is where a packaged incusd listens.
const DefaultSocket = "/var/lib/incus/unix.socket"

// SocketPath resolves the socket the way the incus CLI does: $INCUS_SOCKET, then
// $INCUS_DIR/unix.socket, then DefaultSocket.
func SocketPath() string {
	if s := os.Getenv("INCUS_SOCKET"); s != "" {
		return s
	}
	if d := os.Getenv("INCUS_DIR"); d != "" {
		return filepath.Join(d, "unix.socket")
	}
	return DefaultSocket
}

// Client talks to one incusd, over its unix socket or (NewRemote) over HTTPS to a
// remote. It is safe for concurrent use.
type Client struct {
	socket string  // the unix socket; "" for an HTTPS remote
	remote *Remote // the HTTPS remote; nil for the unix socket
	base   string  // scheme and host of the API's URLs
	http   *http.Client
	ws     *websocket.Dialer
	// Project, when set, scopes every request to that Incus project.
	Project string
	broken  error // Broken's error
	// Target, when set, places the instances this client creates on that cluster
	// member (the target query parameter of POST /1.0/instances).
	Target string
}

// New returns a client for the incusd listening on socket.
func New(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", socket)
			if h, ok := ctx.Value(hangUpKey{}).(*hangUp); ok && err == nil {
				return &watchedConn{Conn: conn, h: h}, nil
			}
			return conn, err
		},
		// One connection per request, never reused. incusd's unix listener reads the
		// first 8 bytes of each new connection inside its accept loop (its STARTTLS
		// check), so a connection that reaches it and says nothing holds every other
		// connection in the backlog. With a pool, Go's transport dials for a waiting
		// request and, when a busy connection frees up first, parks the new one idle
		// and silent: `box list` then stalled until the pool dropped it 30 s later
		// (issue 26; TestConcurrentCallsNeverHoldIncusdsAcceptLoop). Without keep-alive
		// every dialed connection carries its request at once, and no reused
		// connection can meet incusd's own idle close ("server closed idle
		// connection") mid-request. A local connect costs microseconds.
		DisableKeepAlives: true,
	}
	ws := &websocket.Dialer{
		NetDialContext:  tr.DialContext,
		ReadBufferSize:  32 << 10,
		WriteBufferSize: 32 << 10,
	}
	return &Client{socket: socket, base: "http://unix.socket", http: &http.Client{Transport: tr}, ws: ws}
}

// NewFromEnv returns a client for SocketPath().
func NewFromEnv() *Client { return New(SocketPath()) }

// Broken returns a client whose every request fails with err: a remote that cannot be
// used (see LoadRemote) surfaces where a verb first asks, with its reason and fix.
func Broken(err error) *Client {
	c := New("")
	c.broken = err
	return c
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Socket is the socket path the client dials ("" for an HTTPS remote).
func (c *Client) Socket() string { return c.socket }

// Where names the daemon the client talks to, for messages: the socket's path, or
// "remote NAME (ADDR)".
func (c *Client) Where() string {
	if c.remote != nil {
		return fmt.Sprintf("remote %s (%s)", c.remote.Name, c.remote.Addr)
	}
	return c.socket
}

// Remote is the HTTPS remote the client talks to (nil for the unix socket).
func (c *Client) Remote() *Remote { return c.remote }

// RemoteName is the name of the HTTPS remote the client talks to ("" for the unix socket).
func (c *Client) RemoteName() string {
	if c.remote != nil {
		return c.remote.Name
	}
	return ""
}

// transportErr names where a request failed to go: a remote's errors are
// *RemoteError (with its certificate mismatch inside, when that is the cause).
func (c *Client) transportErr(err error) error {
	if c.remote != nil {
		return &RemoteError{Remote: c.remote.Name, Addr: c.remote.Addr, Err: err}
	}
	return fmt.Errorf("incus socket %s: %w (is incusd running?)", c.socket, err)
}

// response is the envelope of every Incus answer.
type response struct {
	Type       string // sync, async
	Status     string
	StatusCode int
	Operation  string
	Metadata   json.RawMessage
}

// envelope decodes an answer; Metadata points at where the metadata goes.
type envelope struct {
	Type       string `json:"type"`
	Status     string `json:"status"`
	StatusCode int    `json:"status_code"`
	Operation  string `json:"operation"`
	ErrorCode  int    `json:"error_code"`
	Error      string `json:"error"`
	Metadata   any    `json:"metadata"`
}

// request is one API call. path is relative to /1.0 (e.g. "/instances").
type request struct {
	method      string
	path        string
	query       url.Values
	body        any       // JSON-encoded when non-nil
	raw         io.Reader // sent as is when non-nil (with contentType)
	contentType string
	headers     map[string]string // extra headers (the file API's X-Incus-*)
	etag        string            // If-Match
	// out, when set, receives the metadata of a sync answer in the same decoding pass
	// as the envelope (listing 50 instances is then one pass over the JSON, not two).
	out any
}

func (c *Client) url(path string, q url.Values) string {
	if c.Project != "" && q.Get("all-projects") == "" { // incusd refuses both
		if q == nil {
			q = url.Values{}
		}
		q.Set("project", c.Project)
	}
	u := c.base + "/1.0" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do sends r and decodes the envelope. A transport failure names the socket; an API
// error comes back as *Error.
func (c *Client) do(ctx context.Context, r request) (*response, string, error) {
	if c.broken != nil {
		return nil, "", c.broken
	}
	var body io.Reader
	ct := ""
	switch {
	case r.raw != nil:
		raw, stop := cancellableBody(ctx, r.raw)
		defer stop()
		body, ct = raw, r.contentType
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, "", err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	h := &hangUp{}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, hangUpKey{}, h), r.method, c.url(r.path, r.query), body)
	if err != nil {
		return nil, "", err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if r.etag != "" {
		req.Header.Set("If-Match", r.etag)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "box")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if h.seen.Load() {
			err = fmt.Errorf("%w: %w", ErrHungUp, err)
		}
		return nil, "", c.transportErr(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	e := envelope{Metadata: &raw}
	if r.out != nil {
		e.Metadata = r.out
	}
	derr := json.NewDecoder(resp.Body).Decode(&e)
	if e.Type == "error" || resp.StatusCode >= 400 {
		code := e.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, "", &Error{Status: code, Message: e.Error}
	}
	if derr != nil {
		return nil, "", fmt.Errorf("incus %s %s: undecodable answer (HTTP %d): %w", r.method, r.path, resp.StatusCode, derr)
	}
	env := &response{Type: e.Type, Status: e.Status, StatusCode: e.StatusCode, Operation: e.Operation, Metadata: raw}
	return env, resp.Header.Get("ETag"), nil
}

// get decodes the metadata of a sync GET into out and returns the ETag.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) (string, error) {
	_, etag, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q, out: out})
	return etag, err
}

// Query is the raw escape for calls the typed API does not cover (for example the host
// stack's networks, ACLs and profiles). A sync answer's metadata is decoded into out; an
// async answer's operation is waited for and its metadata decoded into out.
func (c *Client) Query(ctx context.Context, method, path string, body, out any) error {
	return c.query(ctx, method, path, nil, body, out)
}

// query is Query with URL query parameters.
func (c *Client) query(ctx context.Context, method, path string, q url.Values, body, out any) error {
	env, _, err := c.do(ctx, request{method: method, path: path, query: q, body: body})
	if err != nil {
		return err
	}
	if env.Type == "async" {
		op, err := c.wait(ctx, env)
		if err != nil {
			return err
		}
		if out != nil && op.Metadata != nil {
			b, _ := json.Marshal(op.Metadata)
			return json.Unmarshal(b, out)
		}
		return nil
	}
	if out != nil && len(env.Metadata) > 0 {
		return json.Unmarshal(env.Metadata, out)
	}
	return nil
}

// Operation is a background task of incusd.
type Operation struct {
	ID          string              `json:"id"`
	Class       string              `json:"class"`
	Description string              `json:"description"`
	Status      string              `json:"status"`
	StatusCode  int                 `json:"status_code"`
	Resources   map[string][]string `json:"resources"`
	Metadata    map[string]any      `json:"metadata"`
	MayCancel   bool                `json:"may_cancel"`
	Err         string              `json:"err"`
}

// Operation status codes (Incus api.StatusCode).
const (
	opSuccess   = 200
	opFailure   = 400
	opCancelled = 401
)

func (op *Operation) done() bool { return op.StatusCode >= opSuccess }

// async runs a mutating call and waits for its operation.
func (c *Client) async(ctx context.Context, r request) (*Operation, error) {
	env, _, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, env)
}

func (c *Client) wait(ctx context.Context, env *response) (*Operation, error) {
	if env.Type != "async" {
		return &Operation{StatusCode: opSuccess, Status: "Success"}, nil
	}
	var op Operation
	if err := json.Unmarshal(env.Metadata, &op); err != nil {
		return nil, fmt.Errorf("incus: decode operation: %w", err)
	}
	return c.WaitOperation(ctx, op.ID)
}

// waitChunk bounds one long-poll so a lost connection is noticed.
const waitChunk = 30

// WaitOperation long-polls /1.0/operations/{id}/wait until the operation ends or ctx is
// done. On ctx end it asks incusd to cancel the operation (when it can be cancelled) and
// returns ctx's error. A failed operation returns *Error with the operation's error text.
func (c *Client) WaitOperation(ctx context.Context, id string) (*Operation, error) {
	path := "/operations/" + url.PathEscape(id) + "/wait"
	for {
		var op Operation
		q := url.Values{"timeout": {strconv.Itoa(waitChunk)}}
		if _, err := c.get(ctx, path, q, &op); err != nil {
			if ctx.Err() != nil {
				c.cancel(id)
				return nil, ctx.Err()
			}
			// incusd answers a wait that outlasts its timeout with an error (its own
			// "context deadline exceeded"), not with the running operation: ask for
			// the operation itself, and wait on while it runs.
			if _, gerr := c.get(ctx, "/operations/"+url.PathEscape(id), nil, &op); gerr != nil {
				if ctx.Err() != nil {
					c.cancel(id)
					return nil, ctx.Err()
				}
				return nil, err
			}
		}
		if !op.done() {
			continue
		}
		if op.StatusCode != opSuccess {
			msg := op.Err
			if msg == "" {
				msg = "operation " + strings.ToLower(op.Status)
			}
			status := op.StatusCode
			if op.StatusCode == opCancelled {
				status = 499
			}
			return &op, &Error{Status: status, Message: msg}
		}
		return &op, nil
	}
}

// cancel asks incusd to cancel an operation; best effort, with its own short deadline
// since the caller's context is already done.
func (c *Client) cancel(id string) {
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_, _, _ = c.do(ctx, request{method: http.MethodDelete, path: "/operations/" + url.PathEscape(id)})
}

// Server is the part of GET /1.0 box reads.
type Server struct {
	APIExtensions []string `json:"api_extensions"`
	APIVersion    string   `json:"api_version"`
	Environment   struct {
		ServerVersion string `json:"server_version"`
		Kernel        string `json:"kernel_version"`
		Driver        string `json:"driver"`
		Storage       string `json:"storage"`
		// Addresses are where the daemon listens on HTTPS (every address of the host
		// when it listens on all of them).
		Addresses []string `json:"addresses"`
	} `json:"environment"`
}

// Server returns the daemon's description (version, API extensions).
func (c *Client) Server(ctx context.Context) (*Server, error) {
	var s Server
	if _, err := c.get(ctx, "", nil, &s); err != nil {
		return nil, fmt.Errorf("incus server: %w", err)
	}
	return &s, nil
}

// ErrHungUp is a daemon that closed the connection without a byte of answer (incus-user
// does so to a user whose grant was revoked). Go's transport reports it as EOF, a reset,
// a broken pipe when the close came before the request was written, or, when it noticed
// the close first, as "server closed idle connection", which has no type: box watches
// the connection itself.
var ErrHungUp = errors.New("the daemon hung up without answering")

type hangUpKey struct{}

// hangUp records that a request's connection ended before its first byte of answer.
type hangUp struct{ seen atomic.Bool }

type watchedConn struct {
	net.Conn
	h   *hangUp
	got atomic.Bool // a byte came back (the transport reads and writes in two goroutines)
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.got.Store(true)
	} else if !c.got.Load() && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		c.h.seen.Store(true)
	}
	return n, err
}

// Write sees the hang-up the transport meets when the daemon closed before the request
// was written: EPIPE (a CI run met it), or a reset.
func (c *watchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && !c.got.Load() && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
		c.h.seen.Store(true)
	}
	return n, err
}
