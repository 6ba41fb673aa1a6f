package boxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WaitFile waits until path exists; the command behind waited ending first fails the test.
func WaitFile(t *testing.T, path string, waited <-chan error, stderr fmt.Stringer) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-waited:
			t.Fatalf("box ended before %s appeared: %v\n%s", filepath.Base(path), err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Must fails the test on err.
func Must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Plant is the hostile command: everything a sandbox can make the host execute.
func Plant(marks string) string {
	return `set -e
git init -q vendor/lib
git -C vendor/lib config core.fsmonitor 'id >` + marks + `/m3; false'
git -C vendor/lib config alias.st '!id >` + marks + `/alias'
git -C vendor/lib config filter.x.smudge 'id >` + marks + `/filter; cat'
echo '* filter=x' > vendor/lib/.gitattributes
echo 'the agent wrote this' > vendor/lib/code.txt
git -C vendor/lib add code.txt .gitattributes
git -C vendor/lib -c core.fsmonitor=false -c user.name=a -c user.email=a@example.com commit -qm 'made inside'
# The project's own repository: read-only where the protected set holds, else audited.
git config core.fsmonitor 'id >` + marks + `/top; false' 2>/dev/null || true
printf '#!/bin/sh\nid >` + marks + `/hook\n' > .git/hooks/post-checkout 2>/dev/null && chmod +x .git/hooks/post-checkout || true
`
}
