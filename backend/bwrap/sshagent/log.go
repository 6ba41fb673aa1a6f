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

func (f *Filter) record(r Record) {
	r.Time = time.Now().UTC()
	line, _ := json.Marshal(r)
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
	if f.Log != nil {
		f.Log.Write(append(line, '\n'))
	}
}

// Summary is the run's one line about the agent.
func (f *Filter) Summary() string {
	signed, refused := f.Counts()
	f.mu.Lock()
	noBind := f.noBind
	f.mu.Unlock()
	s := fmt.Sprintf("ssh agent: %d signature(s) allowed, %d request(s) refused", signed, refused)
	if noBind > 0 {
		s += fmt.Sprintf(", %d of them because the client sent no session-bind (the ssh inside must be OpenSSH 8.9 or later)", noBind)
	}
	return s
}
