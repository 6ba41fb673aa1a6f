package policy

import (
	"errors"
	"reflect"
	"testing"
)

func TestParsePorts(t *testing.T) {
	pub, hp, err := ParsePorts([]string{"3000", "8080:80"}, []string{"5432"})
	if err != nil || !reflect.DeepEqual(pub, []PortMap{{3000, 3000}, {8080, 80}}) || !reflect.DeepEqual(hp, []uint16{5432}) {
		t.Errorf("ParsePorts = %v, %v, %v", pub, hp, err)
	}
	if pub, hp, err := ParsePorts(nil, nil); pub != nil || hp != nil || err != nil {
		t.Errorf("none: %v, %v, %v", pub, hp, err)
	}
	var pe *PortListError
	if _, _, err := ParsePorts([]string{"99999"}, []string{"x"}); !errors.As(err, &pe) || !pe.Publish || err.Error() != `port "99999": want a number from 1 to 65535` {
		t.Errorf("a bad --publish first: %v", err)
	}
	if _, _, err := ParsePorts([]string{"80"}, []string{"1", "0"}); !errors.As(err, &pe) || pe.Publish || err.Error() != `port "0": want a number from 1 to 65535` {
		t.Errorf("a bad host port: %v", err)
	}
}
