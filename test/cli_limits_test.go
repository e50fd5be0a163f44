package test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
)

// Configuration is bounded at parse time: a numeric setting outside its
// range, or a file the CLI reads that is larger than its cap (/dev/zero
// among them), ends the process at once with status 2 and one line that
// names the setting or file.
func TestCLI_ConfigurationIsBoundedAtParseTime(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("meshes:\n  - name: game\n    handler_concurrency: 1000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", huge}, "handler_concurrency 1000000000 out of range 1..65536"},
		{[]string{"run", "--config", "/dev/zero"}, "config file /dev/zero: larger than 4 MiB"},
		{[]string{"run", "--secret-file", "/dev/zero"}, "secret file /dev/zero: larger than 4 KiB"},
		{[]string{"run", "--admin-token-file", "/dev/zero"}, "admin token file /dev/zero: larger than 4 KiB"},
		{[]string{"run", "--tls-ca", "/dev/zero", "--tls-cert", "/dev/zero", "--tls-key", "/dev/zero"}, "CA file: /dev/zero: larger than 4 MiB"},
	} {
		r := cliRun(t, 30*time.Second, tc.args...)
		if r.code != 2 {
			t.Errorf("zlink-node %s: exit %d, want 2; stderr %q", strings.Join(tc.args, " "), r.code, r.stderr)
			continue
		}
		if line := oneLineStderr(t, r); !strings.Contains(line, tc.want) {
			t.Errorf("zlink-node %s: %q, want %q", strings.Join(tc.args, " "), line, tc.want)
		}
	}
}

// A name the Location Store would refuse is a startup error, one line,
// exit 2, in the Go API and the CLI alike: the node never prints ready
// and retries publishing its descriptor forever.
func TestConfig_NamesTheStoreRefusesAreStartupErrors(t *testing.T) {
	long := strings.Repeat("n", 5000)
	for _, mesh := range []string{"g{x}", long} {
		o := zlink.NewOptions()
		o.AddRouteMesh(mesh).SetRoutingID("a")
		h, err := zlink.Start(ctxT(t, 10*time.Second), o)
		if !errors.Is(err, zlink.ErrConfig) {
			if h != nil {
				stopHost(t, h)
			}
			t.Errorf("Start with mesh %.16q: %v, want ErrConfig", mesh, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--mesh", "g{x}"}, "must not contain '{' or '}'"},
		{[]string{"run", "--rid", long}, "RID"},
		{[]string{"run", "--mesh", long}, "want 1..256 bytes (it has 5000)"},
		{[]string{"run", "--server", long}, "ChannelName"},
		{[]string{"request", "--peer", "tcp://127.0.0.1:1", "--mesh", "m{", "--channel", "c"}, "--mesh: mesh name"},
		{[]string{"spot", "--location", "redis://127.0.0.1:1", "counter", "", "get"}, "both must be non-empty"},
	} {
		r := cliRun(t, 30*time.Second, tc.args...)
		name := strings.Join(tc.args, " ")
		if len(name) > 80 {
			name = name[:80] + "…"
		}
		if r.code != 2 {
			t.Errorf("zlink-node %s: exit %d, want 2; stderr %.300q", name, r.code, r.stderr)
			continue
		}
		if line := oneLineStderr(t, r); !strings.Contains(line, tc.want) || len(line) > 600 {
			t.Errorf("zlink-node %s: %.300q, want one short line saying %q", name, line, tc.want)
		}
	}
}

// Control characters in names are escaped in the ready line: a name can
// neither break the line nor fake a field.
func TestCLI_ReadyLineEscapesNames(t *testing.T) {
	p := cliStart(t, "run", "--mesh", "m\x1b[31m\nready mesh=x", "--rid", "rid-\u00e9")
	line := p.nextLine(30 * time.Second)
	f := cliFields(line)
	if f["mesh"] != `"m\x1b[31m\nready\x20mesh=x"` || f["rid"] != "rid-\u00e9" {
		t.Fatalf("ready line %q: mesh=%s rid=%s", line, f["mesh"], f["rid"])
	}
	if strings.ContainsAny(line, "\x1b\n") {
		t.Fatalf("ready line %q holds a control character", line)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// An error line escapes control characters too.
func TestCLI_ErrorLineEscapesControlCharacters(t *testing.T) {
	r := cliRun(t, 30*time.Second, "run", "--mesh", "m\x1b[31m{", "--rid", "a")
	line := oneLineStderr(t, r)
	if r.code != 2 || strings.ContainsRune(line, 0x1b) || !strings.Contains(line, `m\x1b[31m{`) {
		t.Fatalf("exit %d, %q", r.code, line)
	}
}
