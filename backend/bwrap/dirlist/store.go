package dirlist

// A cache kept on disk between runs: the run after reuses the listings of the
// directories unchanged since the last run's walk after its sandbox ended. Nothing in
// what makes a listing reusable depends on the process that read it: a listing is taken
// back only while its directory's device, inode and change time are those read before it
// was, and every change to its entries since sets a later change time (see the package
// comment). The file lives in box's data directory, outside every sandbox, as the audit's
// own snapshot does; one box cannot read whole is not used.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// storeMagic starts a stored cache (its format's version in the last byte).
const storeMagic = "boxdirl1"

// MaxStore bounds a stored cache's size: a larger one is neither written nor read.
const MaxStore = 64 << 20

// Save writes c's listings to path (made 0600, replaced whole by a rename, so a run
// reading it meanwhile sees the old one or this one).
func (c *Cache) Save(path string) error {
	if c == nil || path == "" {
		return nil
	}
	b := []byte(storeMagic)
	for dir, l := range c.dirs {
		b = appendString(b, dir)
		b = binary.AppendUvarint(b, l.st.dev)
		b = binary.AppendUvarint(b, l.st.ino)
		b = binary.AppendVarint(b, l.st.ctime)
		b = binary.AppendUvarint(b, uint64(len(l.ents)))
		for _, e := range l.ents {
			b = append(b, e.Type)
			b = appendString(b, e.Name)
		}
		if len(b) > MaxStore {
			return errors.New("dirlist: too many listings to keep")
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		// A directory run in for the first time: the rare moment to forget those not run
		// in for long, so the store does not grow with every directory ever used.
		prune(filepath.Dir(path), time.Now())
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".listings-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// StaleAfter is how long a directory's listings are kept unused: a run rewrites them, so
// older ones are of a directory not run in since (a full walk rebuilds them if it is).
const StaleAfter = 30 * 24 * time.Hour

// tempStaleAfter is the age past which a temporary file is one a killed run left.
const tempStaleAfter = time.Hour

// prune removes the stored listings in dir not written for StaleAfter, and temporary
// files older than tempStaleAfter; what it cannot remove stays (a cache: never an error).
func prune(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := now.Sub(info.ModTime())
		if strings.HasPrefix(e.Name(), ".listings-") && age > tempStaleAfter || age > StaleAfter {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Load reads a cache Save wrote, as the walk before a new one (New's prev). Anything
// short of a whole, well-formed file (none yet, cut short, another format) is nil: the
// walk lists every directory.
func Load(path string) *Cache {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxStore {
		return nil
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil
	}
	c, err := parseStore(buf.Bytes())
	if err != nil {
		return nil
	}
	return c
}

var errStore = errors.New("dirlist: not a stored cache")

func parseStore(b []byte) (*Cache, error) {
	rest, ok := bytes.CutPrefix(b, []byte(storeMagic))
	if !ok {
		return nil, errStore
	}
	r := &reader{b: rest}
	c := &Cache{dirs: map[string]listing{}, trusted: map[uint64]bool{}}
	for len(r.b) > 0 {
		dir := r.str()
		l := listing{st: Stamp{dev: r.uvarint(), ino: r.uvarint(), ctime: r.varint(), keep: true}}
		n := r.uvarint()
		if r.bad || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || n > uint64(len(r.b)) {
			return nil, errStore
		}
		l.ents = make([]Ent, 0, n)
		for range n {
			e := Ent{Type: r.byte()}
			e.Name = r.str()
			if r.bad || e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
				return nil, errStore
			}
			l.ents = append(l.ents, e)
		}
		c.dirs[dir] = l
	}
	return c, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// reader takes a stored cache's fields in turn; a field past the end, or a malformed
// one, sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
