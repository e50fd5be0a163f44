package routemesh

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// Status names the security profile in force, the node's own identity
// (its certificate's with TLS) and, per ready peer, the identity the peer
// proved; the JSON form carries the same.
func TestStatus_Security(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	secret := TrustConfig{Secret: []byte("status-secret")}
	for _, tc := range []struct {
		name      string
		setup     func(*MeshBuilder)
		profile   string
		cert      string
		secret    bool
		idPrefix  string
		peerCerts bool
	}{
		{"none", func(*MeshBuilder) {}, SecurityNone, "", false, "none:anonymous", false},
		{"shared secret", func(b *MeshBuilder) { b.SetTrust(secret) }, SecuritySharedSecret, "", true, "shared:", false},
		{"tls", func(b *MeshBuilder) { b.SetTLS(tlsFiles(t, ca, testMeshID)) }, SecurityTLS, testMeshID, false, "tls:" + testMeshID + ":", true},
		{"tls and secret", func(b *MeshBuilder) { b.SetTLS(tlsFiles(t, ca, testMeshID)).SetTrust(secret) }, SecurityTLS, testMeshID, true, "tls:" + testMeshID + ":", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startStatusNode(t, "srv", func(b *MeshBuilder) { tc.setup(b) })
			cli := startStatusNode(t, "cli", func(b *MeshBuilder) { tc.setup(b); b.AddPeer(srv.Endpoint(), "srv") })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cli.WaitPeers(ctx, 1); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				n    *Node
				peer string
			}{{srv, "cli"}, {cli, "srv"}} {
				st := waitStatus(t, c.n, func(st Status) bool {
					p, ok := st.Peer(c.peer)
					return ok && p.State == PeerReady
				})
				sec := st.Security
				if sec.Profile != tc.profile || sec.Certificate != tc.cert || sec.SharedSecret != tc.secret ||
					sec.Identity != c.n.SecurityIdentity() || !strings.HasPrefix(sec.Identity, tc.idPrefix) {
					t.Fatalf("%s: security %+v, want profile %s certificate %q shared_secret %v identity %s…",
						c.n.RID(), sec, tc.profile, tc.cert, tc.secret, tc.idPrefix)
				}
				if strings.Contains(sec.Identity, "status-secret") {
					t.Fatalf("%s: the identity shows the secret: %s", c.n.RID(), sec.Identity)
				}
				p, _ := st.Peer(c.peer)
				wantCert := ""
				if tc.peerCerts {
					wantCert = testMeshID
				}
				if p.Identity != sec.Identity || p.Certificate != wantCert {
					t.Fatalf("%s: peer %s identity %q certificate %q, want %q and %q", c.n.RID(), c.peer, p.Identity, p.Certificate, sec.Identity, wantCert)
				}
				raw, err := json.Marshal(st)
				if err != nil {
					t.Fatal(err)
				}
				var back struct {
					Security map[string]any `json:"security"`
					Peers    []map[string]any
				}
				if err := json.Unmarshal(raw, &back); err != nil || back.Security["profile"] != tc.profile ||
					back.Security["identity"] != sec.Identity || len(back.Peers) == 0 || back.Peers[0]["identity"] != sec.Identity {
					t.Fatalf("%s: JSON %s", c.n.RID(), raw)
				}
			}
		})
	}
}

// A peer that is not ready proved nothing: it shows no identity.
func TestStatus_SecurityNotReadyPeer(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	srv := startStatusNode(t, "srv", func(b *MeshBuilder) { b.SetTLS(tlsFiles(t, ca, testMeshID)) })
	cli := startStatusNode(t, "cli", func(b *MeshBuilder) { b.AddPeer(srv.Endpoint(), "srv") }) // no TLS
	st := waitStatus(t, cli, func(st Status) bool {
		p, ok := st.Peer("srv")
		return ok && p.State == PeerNotConnected && strings.Contains(p.LastError, ErrTLSUnexpected.Error())
	})
	if p, _ := st.Peer("srv"); p.Identity != "" || p.Certificate != "" {
		t.Fatalf("refused peer shows identity %q certificate %q", p.Identity, p.Certificate)
	}
	if st.Security.Profile != SecurityNone || st.Security.Identity != "none:anonymous" {
		t.Fatalf("security %+v", st.Security)
	}
}

func startStatusNode(t testing.TB, rid string, setup func(*MeshBuilder)) *Node {
	t.Helper()
	mb := NewMeshBuilder("sec").SetRoutingID(rid)
	setup(mb)
	sys := actors.NewSystem(actors.Config{Name: "sec-" + rid})
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

// waitStatus polls n's status until cond holds (10 s deadline).
func waitStatus(t testing.TB, n *Node, cond func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := n.Status(ctx)
		cancel()
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status never matched (last: %+v, %v)", n.RID(), st.Peers, err)
		}
		tick := time.NewTimer(20 * time.Millisecond)
		<-tick.C
	}
}
