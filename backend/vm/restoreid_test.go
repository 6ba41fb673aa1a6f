package vm

import "testing"

func TestIdentityKeys(t *testing.T) {
	got := identityKeys(map[string]string{"volatile.uuid": "u", "volatile.eth0.hwaddr": "m", "volatile.eth0.host_name": "veth1",
		"user.box.origin": "clone", "user.box.origin.from": "a", "user.box.created": "t", "user.box.template": "blank", "limits.cpu": "2"})
	want := map[string]string{"volatile.uuid": "u", "volatile.eth0.hwaddr": "m", "user.box.origin": "clone", "user.box.origin.from": "a", "user.box.created": "t"}
	if len(got) != len(want) {
		t.Fatalf("identityKeys = %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("identityKeys[%s] = %q, want %q", k, got[k], v)
		}
	}
}
