package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/routemesh"
)

// cliPeers is the peers part of GET /status with the last error.
type cliPeers struct {
	Peers []struct {
		RID       string `json:"rid"`
		State     string `json:"state"`
		LastError string `json:"last_error"`
	} `json:"peers"`
}

// cliSecurity is the security part of GET /status.
type cliSecurity struct {
	Security struct {
		Profile     string `json:"profile"`
		Identity    string `json:"identity"`
		Certificate string `json:"certificate"`
	} `json:"security"`
	Peers []struct {
		RID         string `json:"rid"`
		State       string `json:"state"`
		Identity    string `json:"identity"`
		Certificate string `json:"certificate"`
	} `json:"peers"`
}

// checkSecurityStatus checks the security profile n states in GET /status
// and in `zlink-node status`, its certificate identity, and the identity
// its ready peer (when named) proved.
func checkSecurityStatus(t *testing.T, n *cliNode, profile, cert, peer string) {
	t.Helper()
	var st cliSecurity
	cliGetJSON(t, n.admin, "/status", &st)
	sec := st.Security
	if sec.Profile != profile || sec.Certificate != cert || sec.Identity == "" {
		t.Fatalf("%s: /status security %+v, want profile %s certificate %q", n.rid, sec, profile, cert)
	}
	if profile == "tls" && !strings.HasPrefix(sec.Identity, "tls:"+cert+":") {
		t.Fatalf("%s: identity %q", n.rid, sec.Identity)
	}
	if peer != "" {
		found := false
		for _, p := range st.Peers {
			if p.RID == peer {
				found = true
				if p.State != "Ready" || p.Identity != sec.Identity || p.Certificate != cert {
					t.Fatalf("%s: peer %+v, want Ready with identity %s and certificate %q", n.rid, p, sec.Identity, cert)
				}
			}
		}
		if !found {
			t.Fatalf("%s: no peer %s in %+v", n.rid, peer, st.Peers)
		}
	}
	r := cliRun(t, 20*time.Second, "status", "--admin", n.admin)
	if want := "security profile=" + profile + " identity=" + sec.Identity; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("%s: zlink-node status: exit %d\n%s\nwant a line with %q", n.rid, r.code, r.stdout, want)
	}
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
	checkSecurityStatus(t, b, "tls", tlsMeshID, "a")
	checkSecurityStatus(t, c, "none", "", "")
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

// The temporary node of `zlink-node request` joins a TLS mesh with the
// --tls-* flags. Without them, or with a certificate naming another
// identity, it is refused at once (well before --wait) with a message
// that names the TLS refusal, and the run node still answers.
func TestCLI_RequestTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	srv, cli := ca.Issue(t, tlsMeshID), ca.Issue(t, tlsMeshID)
	const otherID = "spiffe://zlink.test/mesh/other"
	other := ca.Issue(t, otherID)
	a := cliStartNode(t, "--rid", "a", "--server", "match", "--tls-ca", ca.File, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile)
	// --wait is far longer than the test allows each refused run: a
	// refusal must end the run at once, not at the deadline.
	req := []string{"request", "--peer", a.peerArg(), "--channel", "match", "--data", "hi", "--wait", "10m"}
	withTLS := func(c tlstest.Cert) []string {
		return append(append([]string{}, req...), "--tls-ca", ca.File, "--tls-cert", c.CertFile, "--tls-key", c.KeyFile)
	}
	answered := func(what string) {
		t.Helper()
		r := cliRun(t, 40*time.Second, withTLS(cli)...)
		if r.code != 0 || !strings.Contains(r.stdout, "summary ok=1 errors=0") {
			t.Fatalf("request with TLS flags %s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
		}
	}
	answered("")

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"without TLS flags", req, []string{routemesh.ErrTLSUnexpected.Error(), "requires TLS", "--tls-ca"}},
		{"another identity", withTLS(other), []string{routemesh.ErrTLSIdentity.Error(), otherID, tlsMeshID}},
	} {
		r := cliRun(t, 40*time.Second, tc.args...)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "error no_target ") {
			t.Errorf("%s: exit %d, stdout %q; want 1 and error no_target", tc.name, r.code, r.stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: stdout %q does not say %q", tc.name, r.stdout, w)
			}
		}
	}
	answered("after the refusals")

	for _, args := range [][]string{
		append(req, "--tls-ca", ca.File),
		{"spot", "--location", "redis://127.0.0.1:1", "--tls-ca", ca.File, "counter", "c1", "get"},
	} {
		r := cliRun(t, 20*time.Second, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "missing --tls-cert, --tls-key") {
			t.Errorf("%s --tls-ca alone: exit %d, stderr %q; want 2", args[0], r.code, r.stderr)
		}
	}
}
