package bwrap

import (
	"reflect"
	"testing"
)

func TestOutsideOf(t *testing.T) {
	rt := t.TempDir()
	vars := map[string]string{"HOME": "/home/op", "XDG_CONFIG_HOME": "/cfg", "USER": "op", "XDG_RUNTIME_DIR": rt}
	env := []string{"HOME=/home/op", "A=1"}
	got := OutsideOf(func(k string) string { return vars[k] }, env)
	want := Outside{Home: "/home/op", ConfigHome: "/cfg", DataHome: "/home/op/.local/share", User: "op", RuntimeDir: rt, Environ: env}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OutsideOf = %+v, want %+v", got, want)
	}
}
