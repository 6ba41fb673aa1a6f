package vm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// incusd unpacks an export on the host, as root, before box can look at the instance
// it made, and applies the export's own container templates (metadata.yaml) to the
// rootfs on the host at start. Incus releases have let a crafted backup write host
// files through exactly these: a symlink in place of rootfs/, templates/ or
// exec-output, a hardlink out of the tree, a template whose target climbs out of the
// rootfs or runs through a symlink in it, a template that includes a host file
// (GHSA-7f67-crqm-jgh7, GHSA-2q3f-q5pq-g8wv, GHSA-vxp5-584q-c479, GHSA-73hr-m85f-64v9,
// GHSA-83xr-5xxr-mh92). box export never writes any of them, so box import refuses
// them whatever the host's Incus release: every member is read as it is uploaded, and
// the upload is cut before its end (incusd then creates nothing) unless all held.

// UnsafeMemberError: a member of the export is one box export never writes and that
// incusd could follow out of the instance's own tree on the host.
type UnsafeMemberError struct {
	File   string
	Member string
	Why    string
}

// UnsafeMemberMessage is in every UnsafeMemberError, for the drill (which reads box's
// stderr).
const UnsafeMemberMessage = "box export never writes that"

func (e *UnsafeMemberError) Error() string {
	return fmt.Sprintf("%s: member %q %s: %s, and incusd could follow it out of the box onto the host; nothing was imported", e.File, e.Member, e.Why, UnsafeMemberMessage)
}

func (e *UnsafeMemberError) Hint() string {
	return "do not import this file: no export writes that member; the file was crafted, or altered after it was exported"
}

// maxTemplate bounds a template file: a page of text, never megabytes.
const maxTemplate = 1 << 20

// includeTag matches the pongo2 tags that read another file when a template renders.
// Compiled on first use: a package-level one is compiled by every box start-up.
var includeTag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{%-?\s*(include|ssi|import|extends|from)\b`)
})

// memberScan is what CheckMembers learns of an export as it goes.
type memberScan struct {
	file      string
	symlinks  map[string]map[string]bool // rootfs prefix -> symlink paths under it
	templates []templateUse              // from each metadata.yaml
}

type templateUse struct {
	meta, rootfs, target string
}

// treeOf splits an export member into the tree it belongs to ("backup/container",
// "backup/snapshots/NAME", ...) and the rest, and says whether the rest is inside that
// tree's rootfs/ (rel is then the path under rootfs/; "" for rootfs itself).
func treeOf(name string) (tree, rel string, inRootfs bool) {
	p := strings.Split(name, "/")
	n := 2 // backup/container/rootfs/...
	if len(p) > 1 && strings.HasSuffix(p[1], "snapshots") {
		n = 3 // backup/snapshots/NAME/rootfs/...
	}
	if len(p) > n && p[n] == "rootfs" {
		return strings.Join(p[:n], "/"), strings.Join(p[n+1:], "/"), true
	}
	return "", "", false
}

// CheckMembers reads a whole export (gzip or plain tar) from r and refuses the first
// member incusd could follow out of the instance's tree on the host. It is pure: file
// only names the export in errors.
func CheckMembers(r io.Reader, file string) error {
	br := bufio.NewReader(r)
	var tr *tar.Reader
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &NotExportError{file, "bad gzip: " + err.Error()}
		}
		tr = tar.NewReader(zr)
	} else {
		tr = tar.NewReader(br)
	}
	s := &memberScan{file: file, symlinks: map[string]map[string]bool{}}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &NotExportError{file, "not a tarball (" + err.Error() + ")"}
		}
		if err := s.member(h, tr); err != nil {
			return err
		}
	}
	return s.finish()
}

func (s *memberScan) refuse(member, why string, a ...any) error {
	return &UnsafeMemberError{File: s.file, Member: member, Why: fmt.Sprintf(why, a...)}
}

func (s *memberScan) member(h *tar.Header, body io.Reader) error {
	name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || hasPart(name, "..") {
		return s.refuse(h.Name, "is not a plain relative path")
	}
	if name != "backup" && !strings.HasPrefix(name, "backup/") {
		return s.refuse(h.Name, "lies outside backup/")
	}
	tree, rel, inRootfs := treeOf(name)
	switch {
	case inRootfs && rel == "":
		if h.Typeflag != tar.TypeDir {
			return s.refuse(h.Name, "is not a directory")
		}
	case inRootfs:
		// The box's own files: anything a filesystem holds, but a hardlink must stay in
		// this rootfs, and symlinks are remembered for the templates' targets.
		switch h.Typeflag {
		case tar.TypeLink:
			l := strings.TrimPrefix(h.Linkname, "./")
			if path.IsAbs(l) || path.Clean(l) != l || hasPart(l, "..") || !strings.HasPrefix(l, tree+"/rootfs/") {
				return s.refuse(h.Name, "is a hardlink out of its rootfs (to %q)", h.Linkname)
			}
		case tar.TypeSymlink:
			if s.symlinks[tree] == nil {
				s.symlinks[tree] = map[string]bool{}
			}
			s.symlinks[tree][rel] = true
		}
	default:
		// Outside a rootfs incusd handles the members itself: files and directories only.
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
			return s.refuse(h.Name, "is a %s, not a file or a directory", typeName(h.Typeflag))
		}
		p := strings.Split(name, "/")
		switch {
		case p[len(p)-1] == "metadata.yaml":
			return s.metadata(name, body)
		case len(p) >= 2 && p[len(p)-2] == "templates" && h.Typeflag == tar.TypeReg:
			b, err := io.ReadAll(io.LimitReader(body, maxTemplate+1))
			if err != nil {
				return &NotExportError{s.file, "cannot read " + name + ": " + err.Error()}
			}
			if len(b) > maxTemplate {
				return s.refuse(h.Name, "is a template larger than %d bytes", maxTemplate)
			}
			if m := includeTag().Find(b); m != nil {
				return s.refuse(h.Name, "is a template that reads another file (%s)", m)
			}
		}
	}
	return nil
}

// metadata reads a metadata.yaml's templates: each target must be a plain absolute
// path, each template a plain file name.
func (s *memberScan) metadata(name string, body io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(body, maxIndex+1))
	if err != nil || len(b) > maxIndex {
		return &NotExportError{s.file, "cannot read " + name}
	}
	var meta struct {
		Templates map[string]struct {
			Template string `yaml:"template"`
		} `yaml:"templates"`
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		return &NotExportError{s.file, name + ": " + err.Error()}
	}
	tree := path.Dir(name)
	targets := make([]string, 0, len(meta.Templates))
	for t := range meta.Templates {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		if !path.IsAbs(t) || path.Clean(t) != t || hasPart(t, "..") || t == "/" {
			return s.refuse(name, "has a template whose target %q is not a plain absolute path", t)
		}
		src := meta.Templates[t].Template
		if src == "" || src == "." || src == ".." || strings.ContainsAny(src, "/\\") {
			return s.refuse(name, "has a template whose file %q is not a plain file name", src)
		}
		s.templates = append(s.templates, templateUse{meta: name, rootfs: tree, target: t})
	}
	return nil
}

// finish checks what needs the whole export: no template target runs through a
// symlink in the rootfs it is written into.
func (s *memberScan) finish() error {
	for _, u := range s.templates {
		links := s.symlinks[u.rootfs]
		p := strings.TrimPrefix(u.target, "/")
		for d := p; d != "."; d = path.Dir(d) {
			if links[d] {
				return s.refuse(u.meta, "has a template whose target %q runs through the symlink /%s in the rootfs", u.target, d)
			}
		}
	}
	return nil
}

// hasPart reports whether the slash-separated path p has the component c.
func hasPart(p, c string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == c {
			return true
		}
	}
	return false
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hardlink"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("member of type %q", t)
}

// checkedReader passes an export through to the upload while CheckMembers reads the
// same bytes: a refused member fails the next read, and the end of the file is passed
// on only once every member held, so incusd never receives a whole refused export.
type checkedReader struct {
	r     io.Reader
	pw    *io.PipeWriter
	done  chan error
	ended bool
	err   error // the scan's refusal, once known
}

func newCheckedReader(r io.Reader, file string) *checkedReader {
	pr, pw := io.Pipe()
	c := &checkedReader{r: r, pw: pw, done: make(chan error, 1)}
	go func() {
		err := CheckMembers(pr, file)
		if err != nil {
			pr.CloseWithError(err)
		} else {
			_, _ = io.Copy(io.Discard, pr) // padding after the tar's end
		}
		c.done <- err
	}()
	return c
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.ended {
		return 0, c.result()
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if _, werr := c.pw.Write(p[:n]); werr != nil {
			c.pw.Close()
			c.ended = true
			return 0, c.result()
		}
	}
	if err == io.EOF {
		c.pw.Close()
		c.ended = true
		if serr := c.result(); serr != io.EOF {
			return 0, serr
		}
	}
	return n, err
}

// result waits for the scan's verdict: io.EOF when every member held.
func (c *checkedReader) result() error {
	if c.done != nil {
		c.err = <-c.done
		c.done = nil
	}
	if c.err != nil {
		return c.err
	}
	return io.EOF
}

// Refused ends the scan and returns its refusal, nil when it found none; call once
// the upload is over, whatever its outcome. A scan the upload outlived (Ctrl-C, a
// daemon error) is stopped here, and only a member it had already refused counts.
func (c *checkedReader) Refused() error {
	if !c.ended {
		c.pw.CloseWithError(io.ErrUnexpectedEOF)
		c.ended = true
		var u *UnsafeMemberError
		if err := c.result(); errors.As(err, &u) {
			return err
		}
		return nil
	}
	if err := c.result(); err != io.EOF {
		return err
	}
	return nil
}
