package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
