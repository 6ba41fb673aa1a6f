package incus

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/gorilla/websocket"
)

// incusd may ping an output websocket and hang up at once when the command ends: the
// pong cannot be written (EPIPE on the unix socket), and the stream has still ended
// well. readStream must deliver what came and report no error (the vm drill reported
// "output: write: broken pipe" for commands that had run).
func TestReadStreamPeerGoneAfterPing(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ws.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	up := websocket.Upgrader{}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		cn.WriteMessage(websocket.BinaryMessage, []byte("hello"))
		cn.WriteMessage(websocket.PingMessage, []byte("p"))
		cn.UnderlyingConn().Close() // gone, without a close frame
	}))
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	for range 50 { // the race is the peer's; the verdict must not depend on it
		cn, _, err := d.Dial("ws://incusd/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = readStream(cn, &out)
		cn.Close()
		if err != nil || out.String() != "hello" {
			t.Fatalf("readStream: %q, %v; want hello and no error", out.String(), err)
		}
	}
}
