package incus

import (
	"bytes"
	"context"
	"io"
	"strings"
)

// cancellableBody returns a request body that fails with ctx's error as soon as ctx
// ends, whatever r is doing. net/http's transport, on a cancelled request, waits for
// its body-writing goroutine, and that goroutine may sit in r.Read: on a pipe or FIFO
// whose writer stalls (box import fed from one, then Ctrl-C) it would never return. So
// r is pumped into a pipe by a goroutine of its own; ending ctx closes the pipe's read
// end, which the transport reads, and the request ends at once. The pump ends at r's
// next Read return (its write to the closed pipe fails); a Read that never returns
// keeps only that goroutine, never the caller. stop releases the pump and must be
// called once the request is over. In-memory readers never block and are sent as they
// are (net/http then knows their length).
func cancellableBody(ctx context.Context, r io.Reader) (body io.Reader, stop func()) {
	switch r.(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return r, func() {}
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err)
	}()
	unhook := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	return pr, func() {
		unhook()
		pr.Close()
	}
}
