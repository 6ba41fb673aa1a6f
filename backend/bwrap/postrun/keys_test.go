package postrun

import (
	"os"
	"strings"
	"testing"
)

func TestExecutes(t *testing.T) {
	for _, c := range []struct {
		config string
		want   bool
	}{
		{"[core]\nfsmonitor = id", true},
		// git 2.54's configured hooks (hook.<friendly-name>.command runs on each event
		// hook.<friendly-name>.event names): a hostile review, session 16.
		{"[hook \"lint\"]\ncommand = touch /tmp/pwn", true},
		{"[hook \"lint\"]\nevent = pre-commit", true},
		{"[hook \"lint\"]\nenabled = true", true},
		{"[hook \"lint\"]\nenabled", true},
		{"[hook \"lint\"]\nenabled = false", false},
		{"[hook \"pre-commit\"]\njobs = 4", false},
		{"[hook \"lint\"]\nparallel = true", false},
		// git 2.42's gc.recentObjectsHook: git gc runs it through the shell.
		{"[gc]\nrecentObjectsHook = touch /tmp/pwn", true},
		{"[gc]\nauto = 0", false},
		{"[Core]\nFSMonitor = id", true},
		{"[core]\nfsmonitor", true},
		{"[core]\nhooksPath = .h", true},
		{"[core]\nsshCommand = x", true},
		{"[core]\npager = x", true},
		{"[core]\neditor = x", true},
		{"[core]\naskPass = x", true},
		{"[core]\ngitProxy = x", true},
		{"[core]\nalternateRefsCommand = x", true},
		{"[core]\nbare = false", false},
		{"[core]\nautocrlf = input", false},
		{"[sequence]\neditor = x", true},
		{"[diff]\nexternal = x", true},
		{"[diff \"jpg\"]\ntextconv = x", true},
		{"[diff.jpg]\ntextconv = x", true},
		{"[diff \"jpg\"]\ncommand = x", true},
		{"[diff \"jpg\"]\nbinary = true", false},
		{"[diff]\ntextconv = x", false},
		{"[merge \"m\"]\ndriver = x", true},
		{"[merge \"m\"]\nname = x", false},
		{"[filter \"f\"]\nclean = x", true},
		{"[filter \"f\"]\nsmudge = x", true},
		{"[filter \"f\"]\nprocess = x", true},
		{"[filter \"f\"]\nrequired", false},
		{"[credential]\nhelper = x", true},
		{"[credential \"https://h\"]\nhelper = x", true},
		{"[credential]\nusername = u", false},
		{"[alias]\nx = !id", true},
		{"[alias]\nx = \" !id\"", true},
		{"[alias \"a\"]\nb = !id", true},
		{"[alias]\nco = checkout", false},
		{"[include]\npath = x", true},
		{"[includeIf \"gitdir:/x/\"]\npath = x", true},
		{"[includeIf \"onbranch:main\"]\npath = x", true},
		{"[gpg]\nprogram = x", true},
		{"[tar \"tar.gz\"]\ncommand = x", true},
		{"[tar]\numask = 0022", false},
		{"[sendemail]\nsendmailCmd = x", true},
		{"[lfs \"customtransfer.t\"]\npath = x", true},
		{"[lfs \"extension.e\"]\nclean = x", true},
		{"[lfs \"extension.e\"]\nsmudge = x", true},
		{"[lfs]\nfetchexclude = x", false},
		{"[gpg \"ssh\"]\nprogram = x", true},
		{"[gpg \"ssh\"]\ndefaultKeyCommand = x", true},
		{"[gpg]\nformat = ssh", false},
		{"[uploadpack]\npackObjectsHook = x", true},
		{"[pager]\nlog = x", true},
		{"[pager]\nlog = false", false},
		{"[pager]\nlog", false},
		{"[interactive]\ndiffFilter = x", true},
		{"[web]\nbrowser = x", true},
		{"[browser \"b\"]\ncmd = x", true},
		{"[man \"m\"]\ncmd = x", true},
		{"[remote \"o\"]\nuploadpack = x", true},
		{"[remote \"o\"]\nreceivepack = x", true},
		{"[remote \"o\"]\nvcs = x", true},
		{"[remote \"o\"]\nurl = ext::sh -c id", true},
		{"[remote \"o\"]\nurl = https://example.com/x", false},
		{"[remote \"o\"]\nfetch = +refs/heads/*:refs/remotes/o/*", false},
		{"[url \"ext::sh -c id\"]\ninsteadOf = https://", true},
		{"[url \"https://mirror/\"]\ninsteadOf = https://", false},
		{"[protocol \"ext\"]\nallow = always", true},
		{"[protocol]\nallow = always", true},
		{"[submodule \"s\"]\nupdate = !id", true},
		{"[difftool \"t\"]\ncmd = x", true},
		{"[mergetool \"t\"]\npath = x", true},
		{"[sendemail]\nsmtpServer = /x", true},
		{"[sendemail \"work\"]\ntoCmd = x", true},
		{"[imap]\ntunnel = x", true},
		{"[instaweb]\nhttpd = x", true},
		{"[guitool \"t\"]\ncmd = x", true},
		{"[trace2]\nnormalTarget = /home/u/.bashrc", true},
		{"[user]\nname = x", false},
		{"[branch \"main\"]\nremote = origin", false},
	} {
		es, err := ParseConfig([]byte(c.config))
		if err != nil || len(es) != 1 {
			t.Fatalf("%q: %v %v", c.config, es, err)
		}
		k, got := Executes(es[0])
		if got != c.want {
			t.Errorf("%q (%s): executes %v (%s), want %v", c.config, es[0].Name, got, k.Pattern, c.want)
		}
		if got && k.Runs == "" {
			t.Errorf("%s: no description", k.Pattern)
		}
	}
}

// docs/bwrap.md lists every key of the audit, exactly as ExecKeys names it.
func TestExecKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/bwrap.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ExecKeys {
		if !strings.Contains(string(doc), "| `"+k.Pattern+"` | "+k.Runs+" |") {
			t.Errorf("docs/bwrap.md does not list %s (%s)", k.Pattern, k.Runs)
		}
	}
}
