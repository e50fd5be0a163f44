package routemesh

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

const testMeshID = "spiffe://zlink.test/mesh/rm"

// tlsFiles issues a certificate for identity from ca as a TLSConfig of
// files.
func tlsFiles(t testing.TB, ca *tlstest.CA, identity string) TLSConfig {
	c := ca.Issue(t, identity)
	return TLSConfig{CAFile: ca.File, CertFile: c.CertFile, KeyFile: c.KeyFile}
}

func TestTLSConfig_CheckedAtStart(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	other := tlstest.NewCA(t, "other CA")
	good := tlsFiles(t, ca, testMeshID)
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("no pem here"), 0o600); err != nil {
		t.Fatal(err)
	}
	noID := ca.IssueTemplate(t, &x509.Certificate{Subject: pkix.Name{},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	serverOnly := ca.IssueTemplate(t, &x509.Certificate{Subject: pkix.Name{CommonName: "x"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	foreign := tlsFiles(t, other, testMeshID)
	mem := ca.Issue(t, testMeshID)

	for name, tc := range map[string]struct {
		cfg    TLSConfig
		detail string // "" = accepted
	}{
		"files":            {good, ""},
		"in memory":        {TLSConfig{Roots: ca.Pool(), Certificate: &mem.TLS}, ""},
		"no CA":            {TLSConfig{CertFile: good.CertFile, KeyFile: good.KeyFile}, "no CA"},
		"missing CA file":  {TLSConfig{CAFile: "/nonexistent/ca.pem", CertFile: good.CertFile, KeyFile: good.KeyFile}, "CA file"},
		"CA without PEM":   {TLSConfig{CAFile: empty, CertFile: good.CertFile, KeyFile: good.KeyFile}, "no PEM"},
		"cert without key": {TLSConfig{CAFile: ca.File, CertFile: good.CertFile}, "both"},
		"key of another":   {TLSConfig{CAFile: ca.File, CertFile: good.CertFile, KeyFile: foreign.KeyFile}, "key"},
		"no identity":      {TLSConfig{CAFile: ca.File, CertFile: noID.CertFile, KeyFile: noID.KeyFile}, "no identity"},
		"server-only EKU":  {TLSConfig{CAFile: ca.File, CertFile: serverOnly.CertFile, KeyFile: serverOnly.KeyFile}, "not valid"},
		"cert of other CA": {TLSConfig{CAFile: ca.File, CertFile: foreign.CertFile, KeyFile: foreign.KeyFile}, "not valid"},
	} {
		err := NewMeshBuilder("m").SetTLS(tc.cfg).Config().validate(false)
		switch {
		case tc.detail == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.detail != "" && (!errors.Is(err, ErrInvalid) || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.detail)):
			t.Errorf("%s: err = %v, want ErrInvalid mentioning %q", name, err, tc.detail)
		}
	}
}

// The security identity comes from the certificate (not the RID), and a
// shared secret set as well changes its fingerprint.
func TestTLS_SecurityIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	files := tlsFiles(t, ca, testMeshID)
	id := func(b *MeshBuilder) string {
		tr, _, err := b.Config().security()
		if err != nil {
			t.Fatal(err)
		}
		return tr.SecurityIdentity()
	}
	plain := id(NewMeshBuilder("m").SetTLS(files).SetRoutingID("a"))
	if !strings.HasPrefix(plain, "tls:"+testMeshID+":") || strings.Contains(plain, ":a:") {
		t.Fatalf("identity %q", plain)
	}
	if again := id(NewMeshBuilder("m").SetTLS(tlsFiles(t, ca, testMeshID)).SetRoutingID("b")); again != plain {
		t.Fatalf("another node's certificate with the same identity: %q, want %q", again, plain)
	}
	withSecret := id(NewMeshBuilder("m").SetTLS(files).SetTrust(TrustConfig{Secret: []byte("s3cret")}))
	if withSecret == plain || !strings.HasPrefix(withSecret, "tls:"+testMeshID+":") {
		t.Fatalf("with a secret %q (without %q)", withSecret, plain)
	}
}

// Two TLS nodes become ready to each other and a call passes; each states
// the certificate's identity.
func TestTLS_NodesConnect(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	start := func(rid string, setup func(*MeshBuilder)) *Node {
		mb := NewMeshBuilder("tls").SetRoutingID(rid).SetTLS(tlsFiles(t, ca, testMeshID))
		setup(mb)
		sys := actors.NewSystem(actors.Config{Name: "t-" + rid})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := Start(ctx, mb.Config(), Deps{System: sys})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = n.Stop(context.Background())
			_ = sys.Shutdown(context.Background())
		})
		return n
	}
	srv := start("srv", func(mb *MeshBuilder) {
		mb.HandleDirectRequest("echo", func(c *Context, p []byte) ([]byte, error) { return p, nil })
	})
	cli := start("cli", func(mb *MeshBuilder) { mb.AddPeer(srv.Endpoint(), "srv") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitPeers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := cli.CallNode(ctx, "srv", "echo", []byte("hi")); err != nil || string(got) != "hi" {
		t.Fatalf("CallNode = %q, %v", got, err)
	}
	if cli.SecurityIdentity() != srv.SecurityIdentity() || !strings.HasPrefix(srv.SecurityIdentity(), "tls:"+testMeshID) {
		t.Fatalf("identities %q / %q", cli.SecurityIdentity(), srv.SecurityIdentity())
	}
	if d := srv.descriptor(); d.SecurityIdentity != srv.SecurityIdentity() {
		t.Fatalf("descriptor identity %q", d.SecurityIdentity)
	}
}
