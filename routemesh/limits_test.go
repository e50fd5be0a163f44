package routemesh

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// setField sets the Config field named by a Limit's Setting path.
func setField(t *testing.T, c *Config, path string, v int64) {
	t.Helper()
	f := reflect.ValueOf(c).Elem()
	for _, name := range strings.Split(path, ".") {
		f = f.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("limit %s names no Config field", path)
		}
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		f.SetInt(v)
	case reflect.Uint32, reflect.Uint64:
		f.SetUint(uint64(v))
	default:
		t.Fatalf("limit %s: field of kind %v", path, f.Kind())
	}
}

// Every numeric setting outside its documented range is refused at Start
// with one line naming the setting and the range.
func TestLimits_EachSettingOutsideItsRangeIsRefused(t *testing.T) {
	for _, l := range Limits() {
		var outside []int64
		if l.Min > 0 {
			outside = append(outside, l.Min-1)
		}
		if l.Setting != "PlacementWeight" { // a uint32 cannot exceed its range
			outside = append(outside, l.Max+1)
		}
		for _, v := range outside {
			b := NewMeshBuilder("m")
			var c *Config
			switch l.Setting {
			case "Channel.Concurrency":
				c = b.Config()
				c.channels = append(c.channels, &channelReg{name: "ch", role: RoleServer, weight: DefaultWeight, concurrency: int(v)})
			case "Channel.Weight":
				c = b.Channel("ch").Server().SetWeight(int(v)).Mesh().Config()
			default:
				c = b.Config()
				setField(t, c, l.Setting, v)
			}
			err := c.validate(false)
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%s = %d: %v, want refused", l.Setting, v, err)
				continue
			}
			msg := err.Error()
			if l.Setting != "Channel.Weight" && (!strings.Contains(msg, l.Setting) || !strings.Contains(msg, l.Range())) {
				t.Errorf("%s = %d: %q names not the setting and its range %s", l.Setting, v, msg, l.Range())
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("%s: a message of several lines: %q", l.Setting, msg)
			}
		}
	}
	if err := NewMeshBuilder("m").Config().validate(false); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}

// The PEM files TLS reads are capped: reading stops at the cap, so
// /dev/zero as any of them is refused at Start in one line.
func TestLimits_TLSFilesAreCapped(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	good := tlsFiles(t, ca, "spiffe://zlink.test/mesh/a")
	for name, tc := range map[string]struct {
		set  func(*TLSConfig)
		want string
	}{
		"CA":          {func(c *TLSConfig) { c.CAFile = "/dev/zero" }, "CA file: /dev/zero: larger than 4 MiB"},
		"certificate": {func(c *TLSConfig) { c.CertFile = "/dev/zero" }, "certificate file: /dev/zero: larger than 1 MiB"},
		"key":         {func(c *TLSConfig) { c.KeyFile = "/dev/zero" }, "key file: /dev/zero: larger than 1 MiB"},
	} {
		tc2 := good
		tc.set(&tc2)
		err := NewMeshBuilder("m").SetTLS(tc2).Config().validate(false)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s /dev/zero: %v, want %q", name, err, tc.want)
		}
	}
	if err := NewMeshBuilder("m").SetTLS(good).Config().validate(false); err != nil {
		t.Fatalf("the good files: %v", err)
	}
}

// docs/security.md lists every range Limits enforces, in the setting's own
// table row.
func TestLimits_DocumentedInSecurityMD(t *testing.T) {
	raw, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			rows[name] = line
		}
	}
	for _, l := range Limits() {
		row, ok := rows[l.Setting]
		if !ok {
			t.Errorf("docs/security.md has no row for %s", l.Setting)
			continue
		}
		if !strings.Contains(row, "| "+l.Range()+" |") {
			t.Errorf("docs/security.md: %s row %q does not give the range %s", l.Setting, row, l.Range())
		}
	}
}
