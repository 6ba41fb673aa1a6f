package incus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// ExecPost is the body of POST /1.0/instances/{name}/exec.
type ExecPost struct {
	Command          []string          `json:"command"`
	Environment      map[string]string `json:"environment,omitempty"`
	WaitForWebsocket bool              `json:"wait-for-websocket"`
	Interactive      bool              `json:"interactive"`
	Width            int               `json:"width,omitempty"`
	Height           int               `json:"height,omitempty"`
	User             uint32            `json:"user,omitempty"`
	Group            uint32            `json:"group,omitempty"`
	Cwd              string            `json:"cwd,omitempty"`
	RecordOutput     bool              `json:"record-output"`
}

// WindowSize is a terminal size in characters.
type WindowSize struct{ Width, Height int }

// Exec is one command to run in an instance.
type Exec struct {
	Command []string
	Env     map[string]string
	User    uint32 // uid in the instance; 0 is root
	Group   uint32
	Cwd     string

	// Terminal runs the command on a pty of Size: Stdin feeds it and Stdout gets
	// everything it prints (stderr included); Stderr is unused. The caller puts its own
	// terminal in raw mode. Without Terminal, stdin, stdout and stderr stay separate.
	Terminal bool
	Size     WindowSize

	Stdin  io.Reader // nil: the command reads EOF
	Stdout io.Writer // nil: discarded
	Stderr io.Writer // nil: discarded

	// Resize, when set, forwards terminal size changes (SIGWINCH) to the pty.
	Resize <-chan WindowSize
	// Signal, when set, forwards signals to the command (Ctrl-C without a terminal).
	Signal <-chan syscall.Signal
}

// controlMsg is a message on the exec control websocket.
type controlMsg struct {
	Command string            `json:"command"` // window-resize, signal
	Args    map[string]string `json:"args,omitempty"`
	Signal  int               `json:"signal,omitempty"`
}

// Exec runs a command in a running instance and returns its exit code once the command
// has exited and all its output has been copied (the data websockets closed). When ctx
// ends first, the command is killed and ctx's error returned. On an error the code is
// -1, except 127 (with the error) when Incus cannot find the command.
func (c *Client) Exec(ctx context.Context, name string, e Exec) (int, error) {
	if err := ValidateName(name); err != nil {
		return -1, err
	}
	if len(e.Command) == 0 {
		return -1, fmt.Errorf("exec in instance %q: empty command", name)
	}
	wrap := func(err error) error { return fmt.Errorf("exec %q in instance %q: %w", e.Command[0], name, err) }
	post := ExecPost{
		Command: e.Command, Environment: e.Env, WaitForWebsocket: true,
		Interactive: e.Terminal, User: e.User, Group: e.Group, Cwd: e.Cwd,
	}
	if e.Terminal {
		post.Width, post.Height = e.Size.Width, e.Size.Height
	}
	env, _, err := c.do(ctx, request{method: http.MethodPost, path: instPath(name) + "/exec", body: post})
	if err != nil {
		return -1, wrap(err)
	}
	var op Operation
	if err := json.Unmarshal(env.Metadata, &op); err != nil {
		return -1, wrap(fmt.Errorf("decode operation: %w", err))
	}
	fds := map[string]string{}
	if m, ok := op.Metadata["fds"].(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				fds[k] = s
			}
		}
	}

	// Incus starts the command once every data websocket is connected.
	names := []string{"0", "1", "2", "control"}
	if e.Terminal {
		names = []string{"0", "control"}
	}
	conns := map[string]*websocket.Conn{}
	closeAll := func() {
		for _, cn := range conns {
			_ = cn.Close()
		}
	}
	for _, n := range names {
		secret, ok := fds[n]
		if !ok {
			closeAll()
			c.cancel(op.ID)
			return -1, wrap(fmt.Errorf("no %q websocket in the exec answer", n))
		}
		cn, err := c.websocket(ctx, op.ID, secret)
		if err != nil {
			closeAll()
			c.cancel(op.ID)
			return -1, wrap(err)
		}
		conns[n] = cn
	}
	defer closeAll()

	ctl := &control{conn: conns["control"]}
	go ctl.drain()

	// Output: complete only when each data websocket has closed.
	var outWG sync.WaitGroup
	var outErr error
	var outMu sync.Mutex
	pump := func(cn *websocket.Conn, w io.Writer) {
		defer outWG.Done()
		if err := readStream(cn, w); err != nil {
			outMu.Lock()
			outErr = errors.Join(outErr, err)
			outMu.Unlock()
		}
	}
	if e.Terminal {
		outWG.Add(1)
		go func() {
			pump(conns["0"], e.Stdout)
			// Incus ends the pty stream with a barrier, then waits for the client's side
			// of the same websocket to close before it reports the exit code.
			_ = conns["0"].Close()
		}()
	} else {
		outWG.Add(2)
		go pump(conns["1"], e.Stdout)
		go pump(conns["2"], e.Stderr)
	}
	// Stdin is not waited for: a terminal read may block forever after the command ends.
	go writeStream(conns["0"], e.Stdin)

	stop := make(chan struct{})
	defer close(stop)
	go ctl.forward(stop, e.Resize, e.Signal)

	type result struct {
		op  *Operation
		err error
	}
	opDone := make(chan result, 1)
	go func() {
		o, err := c.WaitOperation(context.WithoutCancel(ctx), op.ID)
		opDone <- result{o, err}
	}()
	outDone := make(chan struct{})
	go func() { outWG.Wait(); close(outDone) }()

	select {
	case <-ctx.Done():
		ctl.send(controlMsg{Command: "signal", Signal: int(syscall.SIGKILL)})
		closeAll()
		c.cancel(op.ID)
		return -1, wrap(ctx.Err())
	case <-outDone:
	}
	var r result
	select {
	case <-ctx.Done():
		ctl.send(controlMsg{Command: "signal", Signal: int(syscall.SIGKILL)})
		c.cancel(op.ID)
		return -1, wrap(ctx.Err())
	case r = <-opDone:
	}
	if r.err != nil {
		if errors.Is(r.err, ErrCommandNotFound) {
			return 127, wrap(r.err) // what a shell would exit with
		}
		return -1, wrap(r.err)
	}
	if outErr != nil {
		return -1, wrap(fmt.Errorf("output: %w", outErr))
	}
	code, ok := r.op.Metadata["return"].(float64)
	if !ok {
		return -1, wrap(errors.New("no exit code in the operation"))
	}
	return int(code), nil
}

// websocket dials an operation websocket: over the unix socket, or over TLS (with the
// same client certificate and pinned server certificate) to a remote.
func (c *Client) websocket(ctx context.Context, opID, secret string) (*websocket.Conn, error) {
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/1.0/operations/" + url.PathEscape(opID) + "/websocket?secret=" + url.QueryEscape(secret)
	cn, resp, err := c.ws.DialContext(ctx, u, nil)
	detail := ""
	if resp != nil && resp.Body != nil {
		if err != nil { // say what incusd answered instead of upgrading
			var e envelope
			_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
			detail = fmt.Sprintf(" (HTTP %d: %s)", resp.StatusCode, e.Error)
		}
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("websocket%s: %w", detail, err)
	}
	return cn, nil
}

// readStream copies binary messages to w until Incus ends the stream: a close, or an
// empty text message (its end-of-stream barrier).
func readStream(cn *websocket.Conn, w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	// A pong that cannot be written means incusd has hung up (it pings and closes as a
	// command ends): the stream is over, which the next read says; gorilla's default
	// handler would return the write error instead.
	cn.SetPingHandler(func(data string) error {
		_ = cn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
		return nil
	})
	for {
		mt, r, err := cn.NextReader()
		if err != nil {
			var ce *websocket.CloseError
			// A reset is incusd hanging up with our pong unread: the stream's end too
			// (the exit code comes from the operation, which says if incusd failed).
			if errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
				errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				return nil
			}
			return err
		}
		if mt == websocket.TextMessage {
			return nil
		}
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
	}
}

// writeStream sends r as binary messages, then the end-of-stream barrier.
func writeStream(cn *websocket.Conn, r io.Reader) {
	if r != nil {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if werr := cn.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				break
			}
		}
	}
	_ = cn.WriteMessage(websocket.TextMessage, nil)
}

// control serialises writes to the exec control websocket.
type control struct {
	mu   sync.Mutex
	conn *websocket.Conn
}

func (c *control) send(m controlMsg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.WriteJSON(m)
}

// drain reads (and drops) what Incus sends on the control socket, so close frames are
// processed.
func (c *control) drain() {
	for {
		if _, _, err := c.conn.NextReader(); err != nil {
			return
		}
	}
}

func (c *control) forward(stop <-chan struct{}, resize <-chan WindowSize, sig <-chan syscall.Signal) {
	for {
		select {
		case <-stop:
			return
		case s, ok := <-resize:
			if !ok {
				resize = nil
				continue
			}
			c.send(controlMsg{Command: "window-resize", Args: map[string]string{
				"width": strconv.Itoa(s.Width), "height": strconv.Itoa(s.Height)}})
		case s, ok := <-sig:
			if !ok {
				sig = nil
				continue
			}
			c.send(controlMsg{Command: "signal", Signal: int(s)})
		}
	}
}
