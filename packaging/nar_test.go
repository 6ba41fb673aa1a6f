package packaging

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// narHash is the SRI sha256 of the Nix archive (NAR) serialisation of path: what
// `nix hash path` prints and what a fixed-output derivation with outputHashMode =
// "recursive" (buildGoModule's goModules) is checked against. It is written from the
// NAR format, independently of nix, so that the tests can check the scripts' use of nix
// against it.
func narHash(path string) (string, error) {
	h := sha256.New()
	str(h, "nix-archive-1")
	if err := narNode(h, path); err != nil {
		return "", err
	}
	return "sha256-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// str writes a NAR string: its length as a little-endian uint64, the bytes, and zero
// padding to a multiple of 8.
func str(w io.Writer, s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	w.Write(n[:])
	io.WriteString(w, s)
	if pad := (8 - len(s)%8) % 8; pad > 0 {
		w.Write(make([]byte, pad))
	}
}

func narNode(w io.Writer, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	str(w, "(")
	str(w, "type")
	switch {
	case fi.Mode().IsRegular():
		str(w, "regular")
		if fi.Mode()&0o111 != 0 {
			str(w, "executable")
			str(w, "")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		str(w, "contents")
		str(w, string(b))
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		str(w, "symlink")
		str(w, "target")
		str(w, target)
	case fi.IsDir():
		str(w, "directory")
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names) // byte order, as nix sorts
		for _, name := range names {
			str(w, "entry")
			str(w, "(")
			str(w, "name")
			str(w, name)
			str(w, "node")
			if err := narNode(w, filepath.Join(path, name)); err != nil {
				return err
			}
			str(w, ")")
		}
	default:
		return fmt.Errorf("%s: a NAR holds only files, directories and symlinks", path)
	}
	str(w, ")")
	return nil
}
