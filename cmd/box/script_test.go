package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
	"github.com/rogpeppe/go-internal/testscript"
)

// statusFileVar names the file where the "box" command of the scripts records its exit
// code, for the scripts' "status" command. It is a hook of this test binary only.
const statusFileVar = "BOXTEST_STATUS_FILE"

// TestMain makes the test binary double as "box": the scripts run the real Main in a
// process of its own, as a user's shell would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"box": func() {
			code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			if f := os.Getenv(statusFileVar); f != "" {
				if err := os.WriteFile(f, []byte(strconv.Itoa(code)), 0o666); err != nil {
					fmt.Fprintf(os.Stderr, "boxtest: record exit status: %v\n", err)
					os.Exit(125)
				}
			}
			os.Exit(code)
		},
	})
}

// TestScript runs the CLI examples in testdata/script. Each script gets its own home:
//
//	HOME=$WORK/home  XDG_CONFIG_HOME=$HOME/.config  XDG_DATA_HOME=$HOME/.local/share
//
// and starts in the project directory $WORK/home/proj. PATH is box, then /usr/bin:/bin.
// Fixtures are unpacked relative to $WORK (so a user profile is
// "-- home/.config/box/profiles/NAME.toml --").
//
// Besides testscript's own commands and conditions, scripts have:
//
//	status N    the last "box" run exited with code N (0 ok, 1 failed, 2 usage)
//	[bwrap]     bwrap is on PATH; under CI=true its absence fails the script
func TestScript(t *testing.T) {
	boxBin, err := exec.LookPath("box")
	if err != nil {
		t.Fatalf("testscript did not install box on PATH: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                filepath.Join("testdata", "script"),
		RequireUniqueNames: true,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, "home")
			proj := filepath.Join(home, "proj")
			if err := os.MkdirAll(proj, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			e.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
			e.Setenv("PATH", strings.Join([]string{filepath.Dir(boxBin), "/usr/bin", "/bin"}, ":"))
			e.Setenv(statusFileVar, filepath.Join(e.WorkDir, ".tmp", "box-status"))
			e.Setenv("BOXBIN", boxBin) // box by its path, for a script that empties PATH
			e.Cd = proj
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": cmdStatus,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "bwrap":
				if _, err := exec.LookPath("bwrap"); err != nil {
					if testenv.CI() {
						return false, fmt.Errorf("required in CI but unavailable: bwrap on PATH")
					}
					return false, nil
				}
				return true, nil
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// cmdStatus checks the exit code of the last "box" command, and forgets it, so a
// second "status" without a box run in between fails rather than reading a stale code.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("usage: status N: %v", err)
	}
	f := ts.Getenv(statusFileVar)
	b, err := os.ReadFile(f)
	if err != nil {
		ts.Fatalf("no exit status recorded: run box first (%v)", err)
	}
	os.Remove(f)
	got, err := strconv.Atoi(string(b))
	ts.Check(err)
	if got != want {
		ts.Fatalf("box exited with %d, want %d", got, want)
	}
}
