package boxtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer a command writes into (exec's copying goroutine) while the
// test reads it: a bare bytes.Buffer read then is a data race, and can panic mid-grow.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
