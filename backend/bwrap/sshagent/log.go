package sshagent

import (
	"encoding/json"
	"fmt"
	"time"
)

// Record is one line of the filter's log (JSON): what was asked, with which key, for
// which destination, and whether box allowed it.
type Record struct {
	Time      time.Time `json:"time"`
	Op        string    `json:"op"`
	Key       string    `json:"key,omitempty"`
	Keys      []string  `json:"keys,omitempty"`
	Host      string    `json:"host,omitempty"`
	Forwarded bool      `json:"forwarded,omitempty"`
	Allowed   bool      `json:"allowed"`
	Reason    string    `json:"reason,omitempty"`
}

// DefaultMaxLog caps the request log: the sandbox reads it and can make requests in a
// loop, so it must not grow with them. Past it, requests are counted, not logged.
const DefaultMaxLog = 1 << 20

// OpTruncated is the op of the log's lines about its cap: one when the cap is reached,
// and one when the filter closes with how many requests went unlogged.
const OpTruncated = "truncated"

func (f *Filter) maxLog() int64 {
	if f.MaxLog > 0 {
		return f.MaxLog
	}
	return DefaultMaxLog
}

func (f *Filter) record(r Record) {
	r.Time = time.Now().UTC()
	line, _ := json.Marshal(r)
	line = append(line, '\n')
	f.mu.Lock()
	defer f.mu.Unlock()
	if !r.Allowed {
		f.refused++
		if r.Reason == reasonNoBind {
			f.noBind++
		}
	} else if r.Op == "sign" || r.Op == "sign-git" {
		f.signed++
	}
	if f.Log == nil {
		return
	}
	if f.truncated || f.logged+int64(len(line)) > f.maxLog() {
		if !f.truncated {
			f.truncated = true
			f.writeLocked(Record{Op: OpTruncated, Reason: fmt.Sprintf("the log reached its cap (%d bytes): later requests are counted, not logged; their count is the last line, written when the run ends", f.maxLog())})
		}
		if r.Allowed {
			f.unloggedAllowed++
		} else {
			f.unloggedRefused++
		}
		return
	}
	f.logged += int64(len(line))
	f.Log.Write(line)
}

// writeLocked writes a line of box's own about the log (f.mu held).
func (f *Filter) writeLocked(r Record) {
	r.Time = time.Now().UTC()
	line, _ := json.Marshal(r)
	f.Log.Write(append(line, '\n'))
}

// closeLog writes the count of the requests the cap kept out of the log.
func (f *Filter) closeLog() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Log == nil || !f.truncated {
		return
	}
	f.writeLocked(Record{Op: OpTruncated, Reason: fmt.Sprintf("truncated: %d more request(s) not logged: %d allowed, %d refused",
		f.unloggedAllowed+f.unloggedRefused, f.unloggedAllowed, f.unloggedRefused)})
}

// Summary is the run's one line about the agent.
func (f *Filter) Summary() string {
	signed, refused := f.Counts()
	f.mu.Lock()
	noBind := f.noBind
	f.mu.Unlock()
	s := fmt.Sprintf("ssh agent: %d signature(s) allowed, %d request(s) refused", signed, refused)
	f.mu.Lock()
	unlogged := f.unloggedAllowed + f.unloggedRefused
	f.mu.Unlock()
	if unlogged > 0 {
		s += fmt.Sprintf(" (the log reached its cap: %d request(s) counted, not logged)", unlogged)
	}
	if noBind > 0 {
		s += fmt.Sprintf(", %d of them because the client sent no session-bind (the ssh inside must be OpenSSH 8.9 or later)", noBind)
	}
	return s
}
