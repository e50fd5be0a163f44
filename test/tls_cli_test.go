package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// cliPeers is the peers part of GET /status with the last error.
type cliPeers struct {
	Peers []struct {
		RID       string `json:"rid"`
		State     string `json:"state"`
		LastError string `json:"last_error"`
	} `json:"peers"`
}

func cliPeer(t *testing.T, admin, rid string) (state, lastErr string) {
	t.Helper()
	var st cliPeers
	cliGetJSON(t, admin, "/status", &st)
	for _, p := range st.Peers {
		if p.RID == rid {
			return p.State, p.LastError
		}
	}
	return "", ""
}

// `zlink-node run` with mesh-link TLS from flags (a) and from the YAML
// config (b) connects; a plaintext node (c) is refused, logged once on a's
// stderr; incomplete or unreadable TLS settings exit 2.
func TestCLI_MeshTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	ca1, ca2 := ca.Issue(t, tlsMeshID), ca.Issue(t, tlsMeshID)
	flags := []string{"--tls-ca", ca.File, "--tls-cert", ca1.CertFile, "--tls-key", ca1.KeyFile}

	a := cliStartNode(t, append([]string{"--rid", "a", "--server", "match"}, flags...)...)

	cfg := filepath.Join(t.TempDir(), "b.yaml")
	writeFile(t, cfg, fmt.Sprintf("tls:\n  ca: %s\n  cert: %s\n  key: %s\nmeshes:\n  - name: default\n    rid: b\n    clients: [match]\n    peers: [%q]\n",
		ca.File, ca2.CertFile, ca2.KeyFile, a.peerArg()))
	b := cliStartNode(t, "--config", cfg)
	cliWait(t, "b shows a Ready over TLS", 10*time.Second, func() bool {
		s, _ := cliPeer(t, b.admin, "a")
		return s == "Ready"
	})

	c := cliStartNode(t, "--rid", "c", "--peer", a.peerArg())
	cliWait(t, "c shows a refused", 10*time.Second, func() bool {
		s, e := cliPeer(t, c.admin, "a")
		return s == "NotConnected" && e != ""
	})
	cliWait(t, "a logs the plaintext peer", 10*time.Second, func() bool {
		return strings.Contains(a.stderr.String(), `"tls_refusal":"plaintext_peer"`)
	})
	if n := strings.Count(a.stderr.String(), "mesh link refused by TLS"); n != 1 {
		t.Fatalf("a logged %d TLS refusals at warn level, want 1:\n%s", n, a.stderr.String())
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"CA only", []string{"run", "--tls-ca", ca.File}, "missing --tls-cert, --tls-key"},
		{"missing CA file", []string{"run", "--tls-ca", filepath.Join(t.TempDir(), "nope.pem"), "--tls-cert", ca1.CertFile, "--tls-key", ca1.KeyFile}, "TLS: CA file"},
		{"key of another cert", []string{"run", "--tls-ca", ca.File, "--tls-cert", ca1.CertFile, "--tls-key", ca2.KeyFile}, "TLS: certificate"},
	} {
		r := cliRun(t, 20*time.Second, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
}
