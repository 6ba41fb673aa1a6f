package drill

// The secrets group's git-config row: the fixture's repository config holds credentials
// as CI leaves them (actions/checkout's http.<url>.extraheader, a token in a remote
// URL); the probe reads the file as any process inside would. The namespaces mode binds
// a copy without them (backend/bwrap/gitcreds.go); the Landlock mode refuses to launch
// with them (isolation auto too, where it falls back), which is the protection holding:
// the drill takes them out, runs, and the row says PASS, refused.

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap"
)

// KindGitCred: Targets[0] is a git config file, Targets[1] the marker of the credential
// planted in it; the marker read inside = seen.
const KindGitCred Kind = "git-cred"

// gitCredConfig is what the fixture appends to Hp's config, marker being the secret.
func gitCredConfig(marker string) string {
	return "[http \"https://box-drill.invalid/\"]\n\textraheader = AUTHORIZATION: basic " + marker + "\n" +
		"[remote \"origin\"]\n\turl = https://oauth2:" + marker + "@box-drill.invalid/x.git\n"
}

// plantGitCred adds the credentials to Hp's config (MakeFixture).
func (f *Fixture) plantGitCred(nonce string) {
	f.GitCred = "box-drill-gitcred-" + nonce
	f.Orig[f.HpConfig()] += gitCredConfig(f.GitCred)
}

// HpConfig is Hp's config file (its git directory's).
func (f *Fixture) HpConfig() string { return f.HpGit + "/config" }

// DropGitCred takes the credentials out again (the Landlock mode refuses to launch with
// them: backend/bwrap's GitCredsError); the row then says so.
func (f *Fixture) DropGitCred() error {
	p := f.HpConfig()
	c := strings.Replace(f.Orig[p], gitCredConfig(f.GitCred), "", 1)
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		return err
	}
	f.Orig[p], f.GitCred, f.GitCredRefused = c, "", true
	return nil
}

func gitCredProbe(in Input) Probe {
	p := Probe{ID: "secret:git-config-credential", Group: "secrets", Name: "a credential in the repository's git config (extraheader, URL userinfo)",
		Kind: KindGitCred, Want: Blocked, Expected: "a copy without it"}
	switch f := in.Fixture; {
	case f == nil:
		p.Skip = "no fixture"
	case f.GitCredRefused:
		// The refusal is the protection: the probe still reads the file, now without it.
		p.Targets = []string{f.HpConfig(), ""}
		p.Expected = "a copy without it, or a refusal to launch"
	case f.GitCred == "":
		p.Skip = "no credential planted"
	default:
		p.Targets = []string{f.HpConfig(), f.GitCred}
	}
	return p
}

// gitCredViaMountProbe reads the same config through a profile mount that shows the
// working directory at another path (in.GitCredVia): box binds the copy without the
// credential at the config's own path only, so it refuses such a mount
// (backend/bwrap's MountOverlapError; hostile review, session 16).
func gitCredViaMountProbe(in Input) Probe {
	p := Probe{ID: "secret:git-config-via-mount", Group: "secrets", Name: "the repository's git config through a mount showing the working directory elsewhere",
		Kind: KindGitCred, Want: Blocked, Expected: "no such mount (box refuses it)"}
	switch f := in.Fixture; {
	case f == nil:
		p.Skip = "no fixture"
	case f.GitCred == "":
		p.Skip = "no credential planted"
	case in.GitCredVia == "":
		p.Skip = "no profile mount shows the working directory at another path (box refuses one)"
	default:
		p.Targets = []string{in.GitCredVia, f.GitCred}
	}
	return p
}

// probeGitCred (inside) reads the config. Unreadable is held; another failure an error.
func probeGitCred(targets []string) (bool, string, error) {
	if len(targets) != 2 {
		return false, "", errors.New("git-cred probe without its targets")
	}
	if targets[1] == "" {
		return false, "box refused to launch while the config held the credential (the Landlock mode cannot hide it); the drill ran without it", nil
	}
	data, err := os.ReadFile(targets[0])
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.EACCES) {
			return false, "unreadable (" + errName(err) + ")", nil
		}
		return false, "", err
	}
	if strings.Contains(string(data), targets[1]) {
		return true, "read the credential", nil
	}
	return false, "read a copy without the credential", nil
}

// KindSystemGitCred: Targets are the system git configs holding a credential on the
// host (/etc/gitconfig, its includes); a credential read in any = seen.
const KindSystemGitCred Kind = "system-git-cred"

// systemGitCredProbe: the system config's row. The plan holds the files' names, never a
// value: the probe finds a credential by the same rule box applies (postrun.Credential).
func systemGitCredProbe(in Input) Probe {
	p := Probe{ID: "secret:system-git-config", Group: "secrets", Name: "a credential in the system git config (" + bwrap.SystemGitConfig + ", its includes)",
		Kind: KindSystemGitCred, Want: Blocked, Expected: "a copy without it"}
	if len(in.SystemGitCreds) == 0 {
		p.Skip = "no credential in the system git config here"
	} else {
		p.Targets = in.SystemGitCreds
	}
	return p
}

// probeSystemGitCred (inside) reads each config and looks for a credential.
func probeSystemGitCred(targets []string) (bool, string, error) {
	for _, t := range targets {
		data, err := os.ReadFile(t)
		if err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrNotExist) {
				continue
			}
			return false, "", err
		}
		if bwrap.HoldsGitCredential(data) {
			return true, "read a credential in " + t, nil
		}
	}
	return false, "read a copy without the credential", nil
}
