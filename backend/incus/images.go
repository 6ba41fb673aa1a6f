package incus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
)

// ImageAlias is a name pointing at an image.
type ImageAlias struct {
	Name        string `json:"name"`
	Target      string `json:"target"` // fingerprint
	Description string `json:"description"`
	Type        string `json:"type"`
}

// ImportImage uploads a split image (a metadata tarball and a rootfs tarball) and points
// the given aliases at it, replacing aliases that already exist. It returns the image's
// fingerprint (sha256 of the metadata tarball followed by the rootfs tarball). Importing
// an image the daemon already has is not an error: the aliases are moved to it.
func (c *Client) ImportImage(ctx context.Context, metadataPath, rootfsPath string, aliases ...string) (string, error) {
	meta, err := os.Open(metadataPath)
	if err != nil {
		return "", fmt.Errorf("import image: %w", err)
	}
	defer meta.Close()
	rootfs, err := os.Open(rootfsPath)
	if err != nil {
		return "", fmt.Errorf("import image: %w", err)
	}
	defer rootfs.Close()

	// Stream the multipart body (the rootfs is hundreds of MB), hashing it on the way.
	sum := sha256.New()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, part := range []struct {
				field string
				f     *os.File
			}{{"metadata", meta}, {"rootfs", rootfs}} {
				w, err := mw.CreateFormFile(part.field, filepath.Base(part.f.Name()))
				if err != nil {
					return err
				}
				if _, err := io.Copy(w, io.TeeReader(part.f, sum)); err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	op, err := c.async(ctx, request{method: http.MethodPost, path: "/images", raw: pr, contentType: mw.FormDataContentType()})
	pr.Close()
	var fp string
	switch {
	case err == nil:
		fp, _ = op.Metadata["fingerprint"].(string)
		if fp == "" {
			return "", fmt.Errorf("import image %s: no fingerprint in the answer", rootfsPath)
		}
	case errors.Is(err, ErrImageExists):
		// Incus read the whole upload before refusing it, so the hash is complete.
		fp = hex.EncodeToString(sum.Sum(nil))
	default:
		return "", fmt.Errorf("import image %s: %w", rootfsPath, err)
	}
	for _, a := range aliases {
		if err := c.SetImageAlias(ctx, a, fp); err != nil {
			return fp, err
		}
	}
	return fp, nil
}

// SetImageAlias points alias at the image fingerprint, creating or moving it.
func (c *Client) SetImageAlias(ctx context.Context, alias, fingerprint string) error {
	body := map[string]string{"name": alias, "target": fingerprint}
	_, _, err := c.do(ctx, request{method: http.MethodPost, path: "/images/aliases", body: body})
	if IsConflict(err) {
		p := "/images/aliases/" + url.PathEscape(alias)
		_, _, err = c.do(ctx, request{method: http.MethodPut, path: p, body: map[string]string{"target": fingerprint}})
	}
	if err != nil {
		return fmt.Errorf("image alias %q: %w", alias, err)
	}
	return nil
}

// ImageAliases lists the image aliases.
func (c *Client) ImageAliases(ctx context.Context) ([]ImageAlias, error) {
	var out []ImageAlias
	if _, err := c.get(ctx, "/images/aliases", url.Values{"recursion": {"1"}}, &out); err != nil {
		return nil, fmt.Errorf("list image aliases: %w", err)
	}
	return out, nil
}

// ImageAlias returns one alias.
func (c *Client) ImageAlias(ctx context.Context, name string) (*ImageAlias, error) {
	var out ImageAlias
	if _, err := c.get(ctx, "/images/aliases/"+url.PathEscape(name), nil, &out); err != nil {
		return nil, fmt.Errorf("image alias %q: %w", name, err)
	}
	return &out, nil
}
