package test

// Helpers of the relocate, spot-move and drain-with-Spots command-line
// tests (cli_relocate_test.go).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// relocateToken writes an admin token file and returns its path.
func relocateToken(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(f, []byte("relocate-test-admin-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// relocateServers starts two Object Servers of mesh game on the Redis at
// loc (automatic topology, admin token file tok when set).
func relocateServers(t *testing.T, loc, tok string) (*cliNode, *cliNode) {
	t.Helper()
	args := []string{"--mesh", "game", "--rid-prefix", "os", "--location", loc, "--object", "server"}
	if tok != "" {
		args = append(args, "--admin-token-file", tok)
	}
	return cliStartNode(t, args...), cliStartNode(t, args...)
}

// adminLine runs an admin command and returns its only stdout line and
// exit status.
func adminLine(t *testing.T, args ...string) (string, cliResult) {
	t.Helper()
	r := cliRun(t, 30*time.Second, args...)
	line := strings.TrimSuffix(r.stdout, "\n")
	if strings.Contains(line, "\n") {
		t.Fatalf("%v: more than one line on stdout: %q", args, r.stdout)
	}
	return line, r
}

// wantAdminError checks `error <code> …<msg>…` on stdout and exit 1.
func wantAdminError(t *testing.T, code, msg string, args ...string) string {
	t.Helper()
	line, r := adminLine(t, args...)
	if r.code != 1 || !strings.HasPrefix(line, "error "+code+" ") || !strings.Contains(line, msg) {
		t.Fatalf("%v: exit %d stdout %q, want exit 1 and `error %s …%s…`; stderr:\n%s", args, r.code, r.stdout, code, msg, r.stderr)
	}
	return line
}
