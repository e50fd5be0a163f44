package test

// Mesh-link TLS (docs/security.md): real nodes on loopback with
// certificates generated at test time.

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/routemesh"
)

func callEcho(t *testing.T, n *routemesh.Node, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx, "echo"); err != nil {
		t.Fatalf("%s: channel echo not ready: %v", n.RID(), err)
	}
	got, err := n.Call(ctx, "echo", "echo", payload)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("call over the link = %q, %v", got, err)
	}
}

// Two TLS nodes connect, a channel call passes, and both state the
// certificate's identity (handshake and descriptor), not their RIDs.
func TestTLS_ChannelCallAndIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	srv, srvLog := tlsNode(t, "srv", issue(t, ca, tlsMeshID), echoServer)
	cli, _ := tlsNode(t, "cli", issue(t, ca, tlsMeshID), func(b *routemesh.MeshBuilder) {
		b.Channel("echo").Client().AddPeer(srv.Endpoint(), "srv")
	})
	callEcho(t, cli, []byte("over TLS"))

	id := srv.SecurityIdentity()
	if !strings.HasPrefix(id, "tls:"+tlsMeshID+":") || cli.SecurityIdentity() != id {
		t.Fatalf("security identities %q / %q, want tls:%s:…", id, cli.SecurityIdentity(), tlsMeshID)
	}
	if strings.Contains(id, srv.RID()) {
		t.Fatalf("identity %q derives from the RID", id)
	}
	if p, ok := status(t, cli).Peer("srv"); !ok || p.State != routemesh.PeerReady {
		t.Fatalf("status of srv: %+v", p)
	}
	if all, _ := srvLog.refusals("plaintext_peer", true); all != 0 {
		t.Fatalf("%d TLS refusals logged between two TLS nodes", all)
	}
}

// A TLS node refuses a plaintext peer in both directions: it is dialed by
// one, and it dials one. Each refusal is a warning once per peer, however
// often the dial is retried.
func TestTLS_RefusesPlaintextPeer(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	t.Run("plaintext dials TLS", func(t *testing.T) {
		tn, tlog := tlsNode(t, "tls", issue(t, ca, tlsMeshID), echoServer)
		pn, plog := tlsNode(t, "plain", nil, func(b *routemesh.MeshBuilder) { b.AddPeer(tn.Endpoint(), "tls") })
		waitFor(t, "three refused dials", 10*time.Second, func() bool {
			all, _ := tlog.refusals("plaintext_peer", true)
			return all >= 3
		})
		if _, warnings := tlog.refusals("plaintext_peer", true); warnings != 1 {
			t.Fatalf("%d warnings for one plaintext peer, want 1", warnings)
		}
		// The plaintext node is told the port requires TLS, once as a warning.
		peerError(t, pn, "tls", routemesh.ErrTLSUnexpected.Error())
		waitFor(t, "the plaintext node logs its refused dials", 10*time.Second, func() bool {
			all, _ := plog.refusals("peer_requires_tls", false)
			return all >= 2
		})
		if _, warnings := plog.refusals("peer_requires_tls", false); warnings != 1 {
			t.Fatalf("%d warnings on the plaintext node, want 1", warnings)
		}
		if p, _ := status(t, pn).Peer("tls"); p.State == routemesh.PeerReady {
			t.Fatal("plaintext node ready to a TLS node")
		}
	})
	t.Run("TLS dials plaintext", func(t *testing.T) {
		pn, plog := tlsNode(t, "plain", nil, echoServer)
		tn, tlog := tlsNode(t, "tls", issue(t, ca, tlsMeshID), func(b *routemesh.MeshBuilder) { b.AddPeer(pn.Endpoint(), "plain") })
		peerError(t, tn, "plain", routemesh.ErrTLSPlaintext.Error())
		waitFor(t, "two refused dials", 10*time.Second, func() bool {
			all, _ := tlog.refusals("plaintext_peer", false)
			return all >= 2
		})
		if _, warnings := tlog.refusals("plaintext_peer", false); warnings != 1 {
			t.Fatalf("%d warnings for one plaintext endpoint, want 1", warnings)
		}
		// The plaintext node says who knocked, too.
		waitFor(t, "plaintext node logs the TLS peer", 5*time.Second, func() bool {
			_, w := plog.refusals("tls_on_plaintext_port", true)
			return w == 1
		})
	})
}

// A certificate from another CA is refused, whichever side holds it.
func TestTLS_RefusesOtherCA(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	other := tlstest.NewCA(t, "other CA")
	// The stranger trusts both CAs, so it accepts our node's certificate:
	// our node is the one that refuses.
	stranger := func(t *testing.T) *routemesh.TLSConfig {
		c := other.Issue(t, tlsMeshID)
		roots := ca.Pool()
		roots.AddCert(other.Cert())
		return &routemesh.TLSConfig{Roots: roots, Certificate: &c.TLS}
	}
	t.Run("stranger dials", func(t *testing.T) {
		tn, tlog := tlsNode(t, "tls", issue(t, ca, tlsMeshID), echoServer)
		sn, _ := tlsNode(t, "stranger", stranger(t), func(b *routemesh.MeshBuilder) { b.AddPeer(tn.Endpoint(), "tls") })
		peerError(t, sn, "tls", routemesh.ErrTLSPeerRefused.Error())
		waitFor(t, "refusal of the stranger", 10*time.Second, func() bool {
			_, w := tlog.refusals("untrusted_certificate", true)
			return w == 1
		})
	})
	t.Run("stranger dialed", func(t *testing.T) {
		sn, _ := tlsNode(t, "stranger", stranger(t), echoServer)
		tn, _ := tlsNode(t, "tls", issue(t, ca, tlsMeshID), func(b *routemesh.MeshBuilder) { b.AddPeer(sn.Endpoint(), "stranger") })
		msg := peerError(t, tn, "stranger", routemesh.ErrTLSUntrusted.Error())
		if !strings.Contains(msg, "unknown authority") {
			t.Fatalf("last error %q does not say why", msg)
		}
	})
}

// A certificate of the right CA naming another identity is refused.
func TestTLS_RefusesWrongIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	tn, tlog := tlsNode(t, "tls", issue(t, ca, tlsMeshID), echoServer)
	const otherID = "spiffe://zlink.test/mesh/other"
	on, olog := tlsNode(t, "other", issue(t, ca, otherID), func(b *routemesh.MeshBuilder) { b.AddPeer(tn.Endpoint(), "tls") })
	msg := peerError(t, on, "tls", routemesh.ErrTLSIdentity.Error())
	if !strings.Contains(msg, tlsMeshID) || !strings.Contains(msg, otherID) {
		t.Fatalf("last error %q does not name both identities", msg)
	}
	waitFor(t, "both sides log the refusal", 10*time.Second, func() bool {
		_, a := olog.refusals("wrong_identity", false)
		_, b := tlog.refusals("refused_by_peer", true)
		return a == 1 && b == 1
	})
}

// A relay between two TLS nodes sees no payload in clear; the same relay
// between two plaintext nodes does (so it records what passes).
func TestTLS_RelaySeesNoPayload(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	marker := []byte("ZLINK-CLEAR-MARKER-7f3a9c")
	payload := bytes.Repeat(marker, 64)
	for _, tc := range []struct {
		name      string
		tls       func() *routemesh.TLSConfig
		wantClear bool
	}{
		{"plaintext", func() *routemesh.TLSConfig { return nil }, true},
		{"tls", func() *routemesh.TLSConfig { return issue(t, ca, tlsMeshID) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := tlsNode(t, "srv", tc.tls(), echoServer)
			r := newRelay(t, srv.Endpoint())
			cli, _ := tlsNode(t, "cli", tc.tls(), func(b *routemesh.MeshBuilder) {
				b.Channel("echo").Client().AddPeer(r.endpoint(), "srv")
			})
			callEcho(t, cli, payload)
			seen := r.captured()
			if len(seen) < len(payload) {
				t.Fatalf("relay saw %d bytes, less than one payload", len(seen))
			}
			if clear := bytes.Contains(seen, marker); clear != tc.wantClear {
				t.Fatalf("marker in the relayed bytes: %v, want %v (%d bytes seen)", clear, tc.wantClear, len(seen))
			}
			if !tc.wantClear && bytes.Contains(seen, []byte("echo")) {
				t.Fatal("channel name in clear on a TLS link")
			}
		})
	}
}
