package routemesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A name the Location Store or the wire would refuse is refused at Start,
// with or without a store, in one line: the node could never be
// discovered otherwise.
func TestConfigValidate_NamesTheStoreRefuses(t *testing.T) {
	long := strings.Repeat("n", 5000)
	for _, tc := range []struct {
		name  string
		build func() *Config
		want  string
	}{
		{"mesh with {", func() *Config { return NewMeshBuilder("g{x}").Config() }, "must not contain '{' or '}'"},
		{"mesh with }", func() *Config { return NewMeshBuilder("g}").Config() }, "must not contain '{' or '}'"},
		{"long mesh", func() *Config { return NewMeshBuilder(long).Config() }, "want 1..256 bytes (it has 5000)"},
		{"Spot mesh with :", func() *Config { return NewMeshBuilder("a:b").SetObjectRole(ObjectServer).Config() }, "must not contain ':'"},
		{"long RID", func() *Config { return NewMeshBuilder("m").SetRoutingID(long).Config() }, "RID"},
		{"long RID prefix", func() *Config { return NewMeshBuilder("m").SetRoutingIDPrefix(long).Config() }, "RID prefix"},
		{"long expected RID", func() *Config { return NewMeshBuilder("m").AddPeer("tcp://127.0.0.1:1", long).Config() }, "expected peer RID"},
		{"long channel", func() *Config { return NewMeshBuilder("m").Channel(long).Client().Config() }, "ChannelName"},
		{"too many servers", func() *Config {
			b := NewMeshBuilder("m")
			h := func(*Context, []byte) ([]byte, error) { return nil, nil }
			for i := range 1025 {
				b.Channel(fmt.Sprintf("c%d", i)).Server().HandleRequest("p", h)
			}
			return b.Config()
		}, "1025 Server channels, more than 1024"},
	} {
		err := tc.build().validate(true)
		if !errors.Is(err, ErrConfig) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", tc.name, err, tc.want)
			continue
		}
		if msg := err.Error(); len(msg) > 400 || strings.Contains(msg, "\n") {
			t.Errorf("%s: not one short line (%d bytes): %.200q", tc.name, len(msg), msg)
		}
	}
	for _, ok := range []func() *Config{
		func() *Config {
			return NewMeshBuilder(strings.Repeat("m", 256)).SetRoutingID(strings.Repeat("r", 256)).Config()
		},
		func() *Config { return NewMeshBuilder("a:b").Config() }, // ':' is fine without Spots
		func() *Config { return NewMeshBuilder("m").SetRoutingIDPrefix(strings.Repeat("p", 243)).Config() },
	} {
		if err := ok().validate(true); err != nil {
			t.Errorf("a name at the limits: %v", err)
		}
	}
	fo := FanoutReg{Channel: long, Publisher: true}
	if err := fo.validate(true); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "fanout channel") {
		t.Errorf("a long fanout channel: %v", err)
	}
}
