package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

// member is one tar member of a test export.
type member struct {
	name, body, link string
	typ              byte
}

func tarOf(t *testing.T, gz bool, ms ...member) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	var tw *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	} else {
		tw = tar.NewWriter(&buf)
	}
	for _, m := range ms {
		typ := m.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: m.name, Typeflag: typ, Linkname: m.link, Mode: 0o644, Size: int64(len(m.body))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return &buf
}

// A box export's members, as incusd writes them for a container with a snapshot and
// an image's templates.
var shapeOfExport = []member{
	{name: "backup/index.yaml", body: "name: b\n"},
	{name: "backup/container", typ: tar.TypeDir},
	{name: "backup/container/backup.yaml", body: "container: {}\n"},
	{name: "backup/container/metadata.yaml", body: "templates:\n  /etc/hostname:\n    when: [create, copy]\n    template: hostname.tpl\n"},
	{name: "backup/container/templates/hostname.tpl", body: "{{ container.name }}\n{% if true %}x{% endif %}\n"},
	{name: "backup/container/rootfs", typ: tar.TypeDir},
	{name: "backup/container/rootfs/bin", typ: tar.TypeSymlink, link: "usr/bin"},
	{name: "backup/container/rootfs/etc/mtab", typ: tar.TypeSymlink, link: "/proc/self/mounts"},
	{name: "backup/container/rootfs/usr/bin/perl", body: "x"},
	{name: "backup/container/rootfs/usr/bin/perl5", typ: tar.TypeLink, link: "backup/container/rootfs/usr/bin/perl"},
	{name: "backup/container/rootfs/dev/null", typ: tar.TypeChar},
	{name: "backup/snapshots/s1/metadata.yaml", body: "templates: {}\n"},
	{name: "backup/snapshots/s1/rootfs", typ: tar.TypeDir},
	{name: "backup/snapshots/s1/rootfs/home", typ: tar.TypeSymlink, link: "/"},
}

func TestCheckMembers(t *testing.T) {
	for _, gz := range []bool{false, true} {
		if err := CheckMembers(tarOf(t, gz, shapeOfExport...), "x.tar"); err != nil {
			t.Errorf("gzip %v: an export of box's shape refused: %v", gz, err)
		}
	}
	with := func(meta string, extra ...member) []member {
		ms := append([]member{}, shapeOfExport...)
		if meta != "" {
			ms[3].body = meta
		}
		return append(ms, extra...)
	}
	tpl := func(target, file string) string {
		return "templates:\n  " + target + ":\n    when: [start]\n    template: " + file + "\n"
	}
	for _, c := range []struct {
		name string
		ms   []member
		want string
	}{
		{"absolute member", with("", member{name: "/etc/cron.d/x"}), "plain relative path"},
		{"climbing member", with("", member{name: "backup/container/rootfs/../../../../etc/x"}), "plain relative path"},
		{"outside backup/", with("", member{name: "etc/x"}), "outside backup/"},
		{"rootfs a symlink", []member{shapeOfExport[0], {name: "backup/container/rootfs", typ: tar.TypeSymlink, link: "/"}}, "is not a directory"},
		{"templates a symlink", with("", member{name: "backup/container/templates", typ: tar.TypeSymlink, link: "/etc"}), "is a symlink"},
		{"exec-output a symlink", with("", member{name: "backup/container/exec-output", typ: tar.TypeSymlink, link: "/etc"}), "is a symlink"},
		{"a hardlink outside rootfs", with("", member{name: "backup/container/x", typ: tar.TypeLink, link: "backup/index.yaml"}), "is a hardlink"},
		{"a device outside rootfs", with("", member{name: "backup/container/sda", typ: tar.TypeBlock}), "is a device"},
		{"hardlink climbing out", with("", member{name: "backup/container/rootfs/s", typ: tar.TypeLink, link: "backup/container/rootfs/../../../etc/shadow"}), "hardlink out of its rootfs"},
		{"hardlink absolute", with("", member{name: "backup/container/rootfs/s", typ: tar.TypeLink, link: "/etc/shadow"}), "hardlink out of its rootfs"},
		{"hardlink into the snapshot", with("", member{name: "backup/container/rootfs/s", typ: tar.TypeLink, link: "backup/snapshots/s1/rootfs/x"}), "hardlink out of its rootfs"},
		{"template target climbing", with(tpl("/../../etc/cron.d/x", "hostname.tpl")), "not a plain absolute path"},
		{"template target relative", with(tpl("etc/x", "hostname.tpl")), "not a plain absolute path"},
		{"template file climbing", with(tpl("/etc/x", "../../../etc/shadow")), "not a plain file name"},
		{"template through a symlink", with(tpl("/h/etc/x", "hostname.tpl"), member{name: "backup/container/rootfs/h", typ: tar.TypeSymlink, link: "/"}), "runs through the symlink /h"},
		{"template through a merged-usr symlink", with(tpl("/bin/x", "hostname.tpl")), "runs through the symlink /bin"},
		{"template onto a symlink", with(tpl("/etc/mtab", "hostname.tpl")), "runs through the symlink /etc/mtab"},
		{"template include", with("", member{name: "backup/container/templates/x.tpl", body: `{% include "/etc/shadow" %}`}), "reads another file"},
		{"template ssi", with("", member{name: "backup/container/templates/x.tpl", body: `{%- ssi "/etc/shadow" %}`}), "reads another file"},
		{"snapshot template through its symlink", with("", member{name: "backup/snapshots/s1/metadata.yaml", body: tpl("/home/etc/x", "a.tpl")}), "runs through the symlink /home"},
	} {
		err := CheckMembers(tarOf(t, true, c.ms...), "x.tar")
		var u *UnsafeMemberError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an UnsafeMemberError saying %q", c.name, err, c.want)
		}
	}
	if err := CheckMembers(strings.NewReader("not a tar at all, long enough to be read as a header block"), "x"); err == nil {
		t.Error("garbage passed")
	}
}

// The reader passes an export through whole when it holds, and never passes on the
// end of one that does not.
func TestCheckedReader(t *testing.T) {
	good := tarOf(t, true, shapeOfExport...).Bytes()
	c := newCheckedReader(bytes.NewReader(good), "x")
	var out bytes.Buffer
	if _, err := out.ReadFrom(c); err != nil || !bytes.Equal(out.Bytes(), good) {
		t.Fatalf("a good export: %v, %d of %d bytes", err, out.Len(), len(good))
	}
	if err := c.Refused(); err != nil {
		t.Errorf("Refused after a good export: %v", err)
	}

	bad := tarOf(t, true, append(append([]member{}, shapeOfExport...), member{name: "backup/container/exec-output", typ: tar.TypeSymlink, link: "/"})...).Bytes()
	c = newCheckedReader(bytes.NewReader(bad), "x")
	out.Reset()
	_, err := out.ReadFrom(c)
	var u *UnsafeMemberError
	if !errors.As(err, &u) {
		t.Fatalf("a bad export read to its end: %v", err)
	}
	if !errors.As(c.Refused(), &u) {
		t.Errorf("Refused: %v", c.Refused())
	}

	// An upload that stops early (Ctrl-C): no refusal, and no scan left running.
	c = newCheckedReader(bytes.NewReader(good), "x")
	buf := make([]byte, 512)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := c.Refused(); err != nil {
		t.Errorf("Refused after a cut upload: %v", err)
	}
}
